// BertFastPath: BERT's own pipeline (BertNormalizer, BertPreTokenizer, WordPiece, added tokens matched as
// they are in the raw text) run fused over UTF-8, without the pipeline's per-code-point text: the same tokens
// and offsets at three times the speed. The Tokenizer takes it when a tokenizer.json is exactly that pipeline
// (private to the library).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "added_vocabulary.h"
#include "berth/tokenizer/bert_normalizer.h"
#include "berth/tokenizer/wordpiece.h"
#include "encoding_ops.h"

namespace berth::tokenizer {

class BertFastPath {
 public:
  // The fast path for a tokenizer.json whose normalizer is a BertNormalizer, pre-tokenizer BertPreTokenizer
  // and model `wordpiece`, and whose added tokens are all matched unnormalized, whole, without stripping;
  // null for any other pipeline.
  static std::unique_ptr<BertFastPath> for_pipeline(const nlohmann::json& root, const WordPiece* wordpiece,
                                                    const std::vector<AddedTokenSpec>& added);

  // Appends the tokens of text, added tokens included, to out. Throws berth::Error for text that is not UTF-8
  // (the caller runs the general pipeline then, for its message).
  void encode(std::string_view text, std::vector<SourceToken>& out) const;

 private:
  BertFastPath(BertNormalizerOptions options, const WordPiece& wordpiece,
               const std::vector<AddedTokenSpec>& added);
  // Normalizes, splits and tokenizes text[begin, end), whose first code point is the original's `first_char`;
  // returns the index of the code point after it. `word` counts HF's words (pre-tokenizer splits) so far.
  uint32_t encode_span(std::string_view text, uint32_t first_char, uint32_t& word,
                       std::vector<SourceToken>& out) const;

  BertNormalizer normalizer_;
  const WordPiece& wordpiece_;         // owned by the pipeline's model
  std::vector<AddedTokenSpec> added_;  // longest first: the first that matches at a position is the longest
  bool added_first_byte_[256] = {};    // bytes that start an added token: the scan skips all others
};

}  // namespace berth::tokenizer
