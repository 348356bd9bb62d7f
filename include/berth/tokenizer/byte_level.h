// GPT-2's byte level (HF's ByteLevel): the byte-to-character table, its 256-character alphabet, and the
// pre-tokenizer's split of a text into byte-level words, as byte-level BPE training counts them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace berth::tokenizer {

// GPT-2's pre-tokenization pattern, HF ByteLevel's with use_regex (run by Oniguruma, as HF runs it).
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// GPT-2's byte-to-character table (HF's bytes_char): byte b is the code point byte_char(b).
char32_t byte_char(unsigned char byte);

// The 256 characters of byte_char, in code point order (HF's pre_tokenizers.ByteLevel.alphabet()).
std::vector<char32_t> byte_level_alphabet();

// Appends the words HF's ByteLevel pre-tokenizer (use_regex true) cuts `text` into, each as UTF-8 of its
// byte characters: a space put first when add_prefix_space and the text does not start with one, then
// GPT-2's pattern, matches and the text between them both kept. Throws berth::Error naming the byte offset
// when text is not UTF-8.
void byte_level_words(std::string_view text, bool add_prefix_space, std::vector<std::string>& words);

}  // namespace berth::tokenizer
