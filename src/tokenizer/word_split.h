// WordSplit: GPT-2's, Llama 3's and Qwen2's pre-tokenization patterns as direct scans over code points, each
// giving the matches Oniguruma gives for the pattern (its \p{L}, \p{N} and \s asked of Oniguruma itself);
// Regex uses one when its pattern is one of these (private to the library).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "berth/tokenizer/aligned_text.h"

namespace berth::tokenizer {

enum class WordSplit {
  Gpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Llama3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|...
  Qwen2,   // Llama 3's with \p{N} for \p{N}{1,3}
};

// The scan for `pattern` when it is exactly one of these patterns.
std::optional<WordSplit> word_split_for(std::string_view pattern);

// The matches in text.chars[from, to), appended to out as [begin, end) relative to `from`: every code point
// is in one match, in order (these patterns leave no gaps).
void split_words(WordSplit split, const AlignedText& text, size_t from, size_t to,
                 std::vector<std::pair<size_t, size_t>>& out);

}  // namespace berth::tokenizer
