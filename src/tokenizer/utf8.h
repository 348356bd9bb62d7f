// UTF-8 decoding and encoding for the tokenizer: strict (HF tokenizers only takes valid strings), with the
// failing byte's offset in the error (private to the library).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "berth/core/error.h"

namespace berth::tokenizer::utf8 {

[[noreturn]] void fail_invalid(std::string_view text, size_t offset, const char* what);

// Decodes the code point starting at text[pos] and advances pos past it; throws berth::Error naming the byte
// offset on malformed, overlong, surrogate or out-of-range sequences.
inline char32_t decode(std::string_view text, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) {
    ++pos;
    return lead;
  }
  size_t length = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    fail_invalid(text, pos, "is not the first byte of a UTF-8 sequence");
  }
  if (pos + length > text.size())
    fail_invalid(text, pos, "starts a sequence cut short by the end of the text");
  for (size_t i = 1; i < length; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80)
      fail_invalid(text, pos, "starts a sequence with a missing continuation byte");
    cp = (cp << 6) | (byte(pos + i) & 0x3F);
  }
  if (cp < min) fail_invalid(text, pos, "starts an overlong encoding");
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    fail_invalid(text, pos, "encodes a surrogate or a value beyond U+10FFFF");
  pos += length;
  return cp;
}

// Decodes text known to be valid (berth's own normalized strings).
inline char32_t decode_valid(const char* p, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(p[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) return ++pos, lead;
  if (lead < 0xE0) {
    char32_t cp = ((lead & 0x1F) << 6) | (byte(pos + 1) & 0x3F);
    return pos += 2, cp;
  }
  if (lead < 0xF0) {
    char32_t cp = ((lead & 0x0F) << 12) | ((byte(pos + 1) & 0x3F) << 6) | (byte(pos + 2) & 0x3F);
    return pos += 3, cp;
  }
  char32_t cp = ((lead & 0x07) << 18) | ((byte(pos + 1) & 0x3F) << 12) | ((byte(pos + 2) & 0x3F) << 6) |
                (byte(pos + 3) & 0x3F);
  return pos += 4, cp;
}

// Writes cp's UTF-8 bytes to out (room for 4) and returns how many.
inline size_t encode(char32_t cp, char* out) {
  if (cp < 0x80) return out[0] = static_cast<char>(cp), 1;
  if (cp < 0x800) {
    out[0] = static_cast<char>(0xC0 | (cp >> 6));
    out[1] = static_cast<char>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (cp >> 12));
    out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (cp >> 18));
  out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (cp & 0x3F));
  return 4;
}

inline void append(std::string& out, char32_t cp) {
  char bytes[4];
  out.append(bytes, encode(cp, bytes));
}

inline bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// For valid UTF-8: the index of the code point each byte belongs to, and at [size] the number of code points.
inline std::vector<uint32_t> char_indices(std::string_view text) {
  std::vector<uint32_t> out(text.size() + 1, 0);
  uint32_t index = 0;
  for (size_t pos = 0; pos < text.size(); ++index) {
    const size_t start = pos;
    decode_valid(text.data(), pos);
    for (size_t b = start; b < pos; ++b) out[b] = index;
  }
  out[text.size()] = index;
  return out;
}

// Decodes UTF-8 into code points; throws berth::Error naming the byte offset when text is not UTF-8.
inline std::u32string to_u32(std::string_view text) {
  std::u32string out;
  for (size_t pos = 0; pos < text.size();) out.push_back(decode(text, pos));
  return out;
}

// Code points in valid UTF-8.
inline size_t count_chars(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += !is_continuation(c);
  return n;
}

}  // namespace berth::tokenizer::utf8
