// Quoted-printable and base64 decoding.
#include "berth/data/transfer_encoding.h"

#include <array>
#include <cstdint>

namespace berth::data {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// 0..63 for base64 characters, -1 for everything else.
constexpr std::array<int8_t, 256> make_base64_table() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 26; ++i) {
    table['A' + i] = static_cast<int8_t>(i);
    table['a' + i] = static_cast<int8_t>(26 + i);
  }
  for (int i = 0; i < 10; ++i) table['0' + i] = static_cast<int8_t>(52 + i);
  table['+'] = 62;
  table['/'] = 63;
  return table;
}

}  // namespace

std::string decode_quoted_printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '=') {
      out += text[i];
      continue;
    }
    // A soft line break: '=' then optional spaces/tabs then the line end (LF or CRLF) or the end of the text.
    size_t j = i + 1;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
    if (j == text.size()) {
      i = j - 1;
      continue;
    }
    if (text[j] == '\n' || (text[j] == '\r' && j + 1 < text.size() && text[j + 1] == '\n')) {
      i = text[j] == '\r' ? j + 1 : j;
      continue;
    }
    if (i + 2 < text.size() && hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
      continue;
    }
    out += '=';
  }
  return out;
}

std::string decode_base64(std::string_view text) {
  static constexpr std::array<int8_t, 256> kTable = make_base64_table();
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;
  int count = 0;  // 6-bit groups held in `bits`
  for (char c : text) {
    if (c == '=') break;
    const int8_t value = kTable[static_cast<unsigned char>(c)];
    if (value < 0) continue;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    if (++count == 4) {
      out += static_cast<char>((bits >> 16) & 0xFF);
      out += static_cast<char>((bits >> 8) & 0xFF);
      out += static_cast<char>(bits & 0xFF);
      bits = 0;
      count = 0;
    }
  }
  if (count == 2) out += static_cast<char>((bits >> 4) & 0xFF);
  if (count == 3) {
    out += static_cast<char>((bits >> 10) & 0xFF);
    out += static_cast<char>((bits >> 2) & 0xFF);
  }
  return out;
}

}  // namespace berth::data
