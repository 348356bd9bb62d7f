// first_invalid_utf8: where text stops being UTF-8 as RFC 3629 (and nlohmann::json, which refuses to write
// anything else) defines it, for parsers that must refuse such text with a message (private to the library).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace berth::text {

// The byte offset of the first byte that does not start or continue a well-formed sequence (overlong forms,
// surrogates and code points above U+10FFFF are ill-formed), or nothing when all of `text` is UTF-8.
inline std::optional<size_t> first_invalid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<uint8_t>(text[i]);
    size_t length = 0;
    uint8_t low = 0x80, high = 0xBF;  // the allowed range of the second byte
    if (byte < 0x80) {
      ++i;
      continue;
    } else if (byte >= 0xC2 && byte <= 0xDF) {
      length = 2;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      length = 3;
      if (byte == 0xE0) low = 0xA0;   // overlong
      if (byte == 0xED) high = 0x9F;  // surrogates
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      length = 4;
      if (byte == 0xF0) low = 0x90;   // overlong
      if (byte == 0xF4) high = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    const auto second = static_cast<uint8_t>(text[i + 1]);
    if (second < low || second > high) return i;
    for (size_t k = 2; k < length; ++k)
      if ((static_cast<uint8_t>(text[i + k]) & 0xC0) != 0x80) return i;
    i += length;
  }
  return std::nullopt;
}

// "0xA1": a byte as messages show it.
inline std::string byte_hex(char byte) {
  char out[8];
  std::snprintf(out, sizeof out, "0x%02X", static_cast<unsigned>(static_cast<uint8_t>(byte)));
  return out;
}

}  // namespace berth::text
