// BERT's pre-tokenizer, exact to HF tokenizers' BertPreTokenizer: split normalized text on whitespace and
// make every punctuation character a word of its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "berth/tokenizer/bert_normalizer.h"

namespace berth::tokenizer {

// A word of a NormalizedText: [byte_begin, byte_end) of its text, [char_begin, char_end) of its characters.
struct Word {
  uint32_t byte_begin = 0;
  uint32_t byte_end = 0;
  uint32_t char_begin = 0;
  uint32_t char_end = 0;
};

class BertPreTokenizer {
 public:
  // Appends the words of text[byte_begin..) (character index char_begin there) to out. Whitespace is Rust's
  // char::is_whitespace; punctuation is ASCII punctuation (symbols such as $ + < = > ^ ` | ~ included) or a
  // Unicode P* category as HF tokenizers' tables have it.
  static void split(const NormalizedText& text, std::vector<Word>& out, uint32_t byte_begin = 0,
                    uint32_t char_begin = 0);

  // The words as strings, for tests and debugging.
  static std::vector<std::string> split_strings(const NormalizedText& text);
};

}  // namespace berth::tokenizer
