// Charset decoding to UTF-8 for email text.
#include "berth/data/charset.h"
#include "core/utf8_check.h"
#include "tokenizer/utf8.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace berth::data {
namespace {

// windows-1252's 0x80-0x9F; the five bytes it leaves undefined map to the C1 controls, as WHATWG's decoder
// does.
constexpr std::array<uint16_t, 32> kWindows1252High = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

std::string decode_windows_1252(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + bytes.size() / 8);
  for (char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80) {
      out += c;
    } else if (byte < 0xA0) {
      append_utf8(out, kWindows1252High[byte - 0x80]);
    } else {
      append_utf8(out, byte);
    }
  }
  return out;
}

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// The length of the well-formed UTF-8 sequence at `pos`, or 0 when it is ill-formed.
size_t valid_sequence_length(std::string_view s, size_t pos, size_t* valid_prefix) {
  const auto lead = static_cast<unsigned char>(s[pos]);
  *valid_prefix = 1;
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte (Unicode table 3-7)
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k < length; ++k) {
    if (pos + k >= s.size()) return 0;
    const auto byte = static_cast<unsigned char>(s[pos + k]);
    const bool ok = k == 1 ? (byte >= low && byte <= high) : is_continuation(byte);
    if (!ok) return 0;
    *valid_prefix = k + 1;
  }
  return length;
}

std::string normalize_charset(std::string_view charset) {
  std::string name;
  for (char c : charset)
    if (!std::isspace(static_cast<unsigned char>(c)) && c != '"') name += static_cast<char>(std::tolower(c));
  return name;
}

}  // namespace

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;  // not a character: the replacement one
  tokenizer::utf8::append(out, static_cast<char32_t>(cp));
}

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t prefix = 0;
  for (size_t pos = 0; pos < bytes.size();) {
    const size_t length = valid_sequence_length(bytes, pos, &prefix);
    if (length > 0) {
      out.append(bytes.substr(pos, length));
      pos += length;
    } else {
      append_utf8(out, 0xFFFD);
      pos += prefix;
    }
  }
  return out;
}

std::string to_utf8(std::string_view bytes, std::string_view charset) {
  const std::string name = normalize_charset(charset);
  static const std::array<std::string_view, 13> kWindows1252Names = {
      "iso-8859-1", "iso8859-1",    "iso_8859-1", "latin1",   "latin-1",    "l1",         "cp819",
      "ibm819",     "windows-1252", "cp1252",     "x-cp1252", "iso-ir-100", "csisolatin1"};
  if (std::find(kWindows1252Names.begin(), kWindows1252Names.end(), name) != kWindows1252Names.end())
    return decode_windows_1252(bytes);
  if (name.empty() || name == "us-ascii" || name == "ascii" || name == "ansi_x3.4-1968") {
    if (!text::first_invalid_utf8(bytes)) return std::string(bytes);
    return decode_windows_1252(bytes);
  }
  return sanitize_utf8(bytes);
}

}  // namespace berth::data
