// pattern_matches: where a tokenizer.json regex pattern matches a text, as the pipeline's Split and Replace
// find it (Oniguruma, with the onig crate's rule for empty matches).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::tokenizer {

// The matches of `pattern` in UTF-8 `text`, left to right, as [begin, end) code point indices. GPT-2's,
// Llama 3's and Qwen2's split patterns run as direct scans that give the same matches, unless use_scans is
// false. Throws berth::Error for a pattern Oniguruma refuses or text that is not UTF-8.
std::vector<std::pair<size_t, size_t>> pattern_matches(const std::string& pattern, std::string_view text,
                                                       bool use_scans = true);

}  // namespace berth::tokenizer
