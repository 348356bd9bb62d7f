// What HF's Encoding does to itself: truncate into windows, merge with another (overflowing windows
// combined), pad (private to the library).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "berth/tokenizer/encode_options.h"
#include "berth/tokenizer/encoding.h"

namespace berth::tokenizer {

// A token of a text: its id, the [begin, end) code points of the original text it came from, and its word
// (HF's: the index of the pre-tokenizer split, an added token being a split of its own).
struct SourceToken {
  int64_t id = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
  uint32_t word = 0;
};

// One sequence's encoding from its tokens, each field allocated once at its size.
Encoding sequence_encoding(const std::vector<SourceToken>& tokens, int64_t type_id);

// HF's Encoding::truncate to `length` tokens: the first window stays, the others (each `stride` tokens into
// the one before) go to overflowing when options.return_overflowing; keep_head keeps head and tail instead.
// Throws berth::Error where HF panics: a stride not below the length.
void truncate_encoding(Encoding& e, size_t length, const TruncationOptions& options);

// HF's Encoding::merge_with(pair, growing_offsets = false): pair appended; the overflowing windows of both
// combined as HF combines them.
void merge_encodings(Encoding& self, Encoding pair);

// Tokens of `ids` that a post-processor adds (special, no offsets, outside either sequence).
Encoding special_encoding(const std::vector<int64_t>& ids, int64_t type_id);

// Every token of e (and of its overflowing windows) marked as belonging to sequence `id`.
void set_sequence_id(Encoding& e, int8_t id);

}  // namespace berth::tokenizer
