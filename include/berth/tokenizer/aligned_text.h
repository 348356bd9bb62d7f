// AlignedText: text on its way through a tokenizer pipeline, each code point carrying the range of
// original code points it came from, so every token's offsets point into the text the user gave.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::tokenizer {

struct AlignedText {
  struct Char {
    char32_t c = 0;
    uint32_t begin = 0;  // [begin, end) in code points of the original text
    uint32_t end = 0;
  };
  std::vector<Char> chars;

  // text as it is, code point i of it at original offset `first_char` + i; throws berth::Error naming the
  // byte offset when text is not UTF-8.
  static AlignedText from_utf8(std::string_view text, uint32_t first_char = 0);
  std::string utf8() const;
  // The original range chars[from, to) covers: (begin of the first, end of the last); empty -> (0, 0).
  std::pair<uint32_t, uint32_t> origin(size_t from, size_t to) const;
  AlignedText slice(size_t from, size_t to) const;
  bool empty() const { return chars.empty(); }
  // Non-overlapping occurrences of `pattern` (code points), left to right, as [begin, end) indices.
  std::vector<std::pair<size_t, size_t>> find(std::u32string_view pattern) const;
  // The same inside chars[from, to), appended to out as indices relative to `from`.
  void find(std::u32string_view pattern, size_t from, size_t to,
            std::vector<std::pair<size_t, size_t>>& out) const;
};

}  // namespace berth::tokenizer
