// How encode truncates and pads (HF tokenizers' TruncationParams and PaddingParams), and one input of a
// batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "berth/tokenizer/encoding.h"

namespace berth::tokenizer {

enum class TruncationStrategy { LongestFirst, OnlyFirst, OnlySecond };
enum class Side { Left, Right };

struct TruncationOptions {
  size_t max_length = 512;  // including the post-processor's special tokens
  TruncationStrategy strategy = TruncationStrategy::LongestFirst;
  Side direction = Side::Right;  // which end loses tokens
  // berth's head+tail truncation (not in HF): a sequence that must lose tokens keeps its first keep_head
  // tokens and fills the rest of its budget from its end, dropping the middle ("head+tail", Sun et al.
  // 2019, "How to Fine-Tune BERT for Text Classification?"). Overrides direction; nullopt: HF's truncation.
  std::optional<size_t> keep_head = std::nullopt;
  // The tokens that truncation cuts off come back in Encoding::overflowing as further windows, each
  // overlapping the one before by `stride` tokens (HF's return_overflowing_tokens); off: they are dropped.
  bool return_overflowing = false;
  size_t stride = 0;
};

enum class PaddingStrategy { Longest, MaxLength };

struct PaddingOptions {
  PaddingStrategy strategy = PaddingStrategy::Longest;  // Longest: to the longest encoding of the batch
  size_t max_length = 0;                                // MaxLength: to this length
  Side direction = Side::Right;
  size_t pad_to_multiple_of = 0;  // 0: off
  int64_t pad_id = 0;
  int64_t pad_type_id = 0;
  std::string pad_token = "[PAD]";
};

struct EncodeInput {
  std::string text;
  std::optional<std::string> text_pair;
};

// Pads encodings (and their overflowing windows) as HF's pad_encodings does (Longest: to the longest of
// them).
void pad_encodings(std::vector<Encoding>& encodings, const PaddingOptions& padding);

}  // namespace berth::tokenizer
