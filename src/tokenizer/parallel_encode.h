// encode_in_parallel: a batch of inputs encoded on several threads, results in input order (private to the
// library; the WordPiece tokenizer and the tokenizer.json pipeline share it).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "berth/tokenizer/encoding.h"

namespace berth::tokenizer {

// out[i] = encode(i) for i < count on `threads` threads (0: every available CPU). The first failing input's
// berth::Error is rethrown as "input <i>: <message>".
std::vector<Encoding> encode_in_parallel(size_t count, size_t threads,
                                         const std::function<Encoding(size_t)>& encode);

}  // namespace berth::tokenizer
