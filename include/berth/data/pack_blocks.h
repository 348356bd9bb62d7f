// pack_blocks: HF's group_texts (run_clm.py) for causal-LM training: every text's tokens concatenated, cut
// into blocks of block_size, the remainder dropped, so that no token is padding.
#pragma once

#include "berth/data/tokenized_dataset.h"

#include <cstddef>

namespace berth::data {

// dataset: rows of any length -> rows of exactly block_size tokens (attention mask 1, type ids 0), no labels
// (a causal LM's labels are its input ids). Fewer than block_size tokens in all throws berth::Error with the
// counts and the fix.
TokenizedDataset pack_blocks(const TokenizedDataset& dataset, size_t block_size);

}  // namespace berth::data
