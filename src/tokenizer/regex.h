// Regex: the regular expressions of tokenizer.json (Split patterns, Replace), run by Oniguruma with the
// syntax HF tokenizers gives it, so \p{L}, lookaheads and (?i:...) mean what they mean there (private to the
// library).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "berth/tokenizer/aligned_text.h"

namespace berth::tokenizer {

class Regex {
 public:
  // Throws berth::Error with Oniguruma's message and `where` (the JSON path) for a pattern it refuses.
  // GPT-2's, Llama 3's and Qwen2's split patterns run as direct scans (word_split.h), with the same matches,
  // unless `scan_known_patterns` is false (to compare the two).
  Regex(const std::string& pattern, const std::string& where, bool scan_known_patterns = true);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Every match in text as [begin, end) byte offsets, left to right, as the onig crate's find_iter: after an
  // empty match right where the previous one ended, the search moves on by one code point.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  // The same over aligned text, as [begin, end) code point indices.
  std::vector<std::pair<size_t, size_t>> find_all(const AlignedText& text) const;
  // The same inside text.chars[from, to), appended to out as code point indices relative to `from`.
  void find_all(const AlignedText& text, size_t from, size_t to,
                std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace berth::tokenizer
