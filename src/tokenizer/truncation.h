// HF's truncation arithmetic, shared by the WordPiece tokenizer and the tokenizer.json pipeline: how many
// tokens each sequence keeps (private to the library).
#pragma once

#include <cstddef>
#include <optional>

#include "berth/tokenizer/encode_options.h"

namespace berth::tokenizer {

const char* strategy_name(TruncationStrategy strategy);

struct KeptLengths {
  size_t first = 0;
  size_t second = 0;
};

// HF's truncate_encodings: the tokens the first and (when given) second sequence keep so that together they
// fit `max_length` (special tokens already taken off). Throws berth::Error where HF fails: only_second
// without a pair, or a sequence too short to lose the excess.
KeptLengths kept_lengths(size_t first, std::optional<size_t> second, size_t max_length,
                         TruncationStrategy strategy);

// truncation.max_length less the special tokens a post-processor adds; throws berth::Error when they do
// not fit (HF wraps around and truncates nothing).
size_t room_for_sequences(size_t max_length, size_t special_tokens, bool pair);

}  // namespace berth::tokenizer
