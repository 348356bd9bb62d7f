// Tokenising a labelled text dataset for training: a TextDataset through the Tokenizer.
#pragma once

#include "berth/data/text_dataset.h"
#include "berth/data/tokenized_dataset.h"
#include "berth/tokenizer/tokenizer.h"

#include <cstddef>
#include <optional>

namespace berth::data {

struct EncodeTextOptions {
  size_t max_length = 128;  // tokens, special tokens included: longer texts are truncated (longest_first)
  // Head+tail truncation (TruncationOptions::keep_head): a longer text keeps its first keep_head tokens and
  // the rest from its end; nullopt: the end is cut off.
  std::optional<size_t> keep_head = std::nullopt;
  size_t threads = 0;  // 0: every available CPU
};

// Each example's text (and text pair) encoded without padding (the DataLoader pads per batch), with the
// labels as the model takes them: (N,) int64 class ids, (N, L) float 0/1 multi-hot, or (N,) float values.
TokenizedDataset encode_text_dataset(const TextDataset& dataset, const tokenizer::Tokenizer& tokenizer,
                                     const EncodeTextOptions& options = {});

}  // namespace berth::data
