// One tokenised input, as HF tokenizers' Encoding holds it: what the model reads plus where each token came
// from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace berth::tokenizer {

struct Encoding {
  std::vector<int64_t> ids;                  // token ids, special tokens included
  std::vector<int64_t> type_ids;             // 0 for the first sequence (and [CLS]), 1 for the pair
  std::vector<int64_t> attention_mask;       // 1 for real tokens, 0 for padding
  std::vector<int64_t> special_tokens_mask;  // 1 for [CLS]/[SEP]/[PAD], 0 for tokens of the text
  // [start, end) in Unicode code points of the original text the token came from (of text_pair for its
  // tokens); (0, 0) for special tokens and padding, as HF tokenizers reports them.
  std::vector<std::pair<size_t, size_t>> offsets;
  // Which input each token belongs to: 0 text, 1 text_pair, -1 special tokens and padding.
  std::vector<int8_t> sequence_ids;
  // Which word each token came from, as HF's word_ids() numbers them (-1 for special tokens and padding): for
  // a text, the pre-tokenizer's splits in order (an added token is one; a text without a pre-tokenizer is one
  // word), counted from 0 in each sequence of a pair; for a list of words (Tokenizer::encode_words), the
  // word.
  std::vector<int64_t> word_ids;
  // With TruncationOptions::return_overflowing: the windows truncation cut off, in order, each post-processed
  // and padded like this one (HF's Encoding::overflowing).
  std::vector<Encoding> overflowing;

  size_t size() const { return ids.size(); }
};

}  // namespace berth::tokenizer
