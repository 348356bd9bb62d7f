// Strict base64: every quad of four alphabet characters gives three bytes; '=' pads only the last quad.
#include "base64.h"

#include <array>
#include <cstdint>

#include "berth/core/error.h"

namespace berth::tokenizer {
namespace {

// 0..63 for the alphabet's characters, -1 for everything else.
constexpr std::array<int8_t, 256> make_table() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  return table;
}

[[noreturn]] void fail(const std::string& where, const char* what, size_t offset) {
  BERTH_FAIL(
      where, ": not valid base64: ", what, " at character ", offset,
      ". Fix: write the field as HF tokenizers does (standard base64 with '=' padding, no line breaks)");
}

}  // namespace

std::string decode_base64_strict(std::string_view text, const std::string& where) {
  static constexpr std::array<int8_t, 256> kTable = make_table();
  if (text.size() % 4 != 0) fail(where, "a length that is not a multiple of 4", text.size());
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t quad = 0; quad < text.size(); quad += 4) {
    const bool last = quad + 4 == text.size();
    size_t padding = 0;
    if (last) padding = text[quad + 3] == '=' ? (text[quad + 2] == '=' ? 2 : 1) : 0;
    uint32_t bits = 0;
    for (size_t i = 0; i < 4 - padding; ++i) {
      const int8_t value = kTable[static_cast<unsigned char>(text[quad + i])];
      if (value < 0)
        fail(where, text[quad + i] == '=' ? "'=' before the end" : "a character outside the alphabet",
             quad + i);
      bits = (bits << 6) | static_cast<uint32_t>(value);
    }
    bits <<= 6 * padding;
    const size_t bytes = 3 - padding;
    if ((bits & ((1u << (8 * (3 - bytes))) - 1)) != 0)
      fail(where, "non-zero bits after the last byte", quad + 3 - padding);
    for (size_t i = 0; i < bytes; ++i) out.push_back(static_cast<char>((bits >> (16 - 8 * i)) & 0xFF));
  }
  return out;
}

}  // namespace berth::tokenizer
