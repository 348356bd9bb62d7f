// AlignedText: UTF-8 in and out, and the original range of a run of code points.
#include "berth/tokenizer/aligned_text.h"

#include <algorithm>

#include "utf8.h"

namespace berth::tokenizer {

AlignedText AlignedText::from_utf8(std::string_view text, uint32_t first_char) {
  AlignedText out;
  out.chars.reserve(text.size());
  uint32_t index = first_char;
  for (size_t pos = 0; pos < text.size();) {
    const char32_t c = utf8::decode(text, pos);
    out.chars.push_back({c, index, index + 1});
    ++index;
  }
  return out;
}

std::string AlignedText::utf8() const {
  std::string out;
  out.reserve(chars.size());
  for (const Char& ch : chars) utf8::append(out, ch.c);
  return out;
}

std::pair<uint32_t, uint32_t> AlignedText::origin(size_t from, size_t to) const {
  if (from >= to) return {0, 0};
  uint32_t begin = chars[from].begin, end = chars[from].end;
  for (size_t i = from + 1; i < to; ++i) {
    begin = std::min(begin, chars[i].begin);
    end = std::max(end, chars[i].end);
  }
  return {begin, end};
}

AlignedText AlignedText::slice(size_t from, size_t to) const {
  AlignedText out;
  out.chars.assign(chars.begin() + static_cast<std::ptrdiff_t>(from),
                   chars.begin() + static_cast<std::ptrdiff_t>(to));
  return out;
}

std::vector<std::pair<size_t, size_t>> AlignedText::find(std::u32string_view pattern) const {
  std::vector<std::pair<size_t, size_t>> out;
  find(pattern, 0, chars.size(), out);
  return out;
}

void AlignedText::find(std::u32string_view pattern, size_t from, size_t to,
                       std::vector<std::pair<size_t, size_t>>& out) const {
  if (pattern.empty()) return;
  for (size_t i = from; i + pattern.size() <= to;) {
    bool same = true;
    for (size_t k = 0; k < pattern.size() && same; ++k) same = chars[i + k].c == pattern[k];
    if (same) {
      out.emplace_back(i - from, i - from + pattern.size());
      i += pattern.size();
    } else {
      ++i;
    }
  }
}

}  // namespace berth::tokenizer
