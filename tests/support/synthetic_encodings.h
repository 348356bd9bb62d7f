// Made-up encodings for the data tests: lengths and ids that differ per row and follow from the row number.
#pragma once

#include <cstddef>
#include <cstdint>

#include "berth/tokenizer/encoding.h"

namespace berth::testing {

// Row `row`: 1 + (7 * row) % 9 tokens (1..9), ids 1000 + 10 * row + position, the second half of the tokens
// in sequence 1, special tokens at both ends.
inline tokenizer::Encoding synthetic_encoding(size_t row) {
  tokenizer::Encoding e;
  const size_t length = 1 + (7 * row) % 9;
  for (size_t i = 0; i < length; ++i) {
    const bool special = i == 0 || i + 1 == length;
    const int8_t sequence = special ? -1 : (2 * i >= length ? 1 : 0);
    e.ids.push_back(static_cast<int64_t>(1000 + 10 * row + i));
    e.type_ids.push_back(sequence == 1 ? 1 : 0);
    e.attention_mask.push_back(1);
    e.special_tokens_mask.push_back(special ? 1 : 0);
    e.offsets.emplace_back(special ? 0 : i, special ? 0 : i + 1);
    e.sequence_ids.push_back(sequence);
  }
  return e;
}

}  // namespace berth::testing
