// pack_blocks: HF's group_texts (run_clm.py, run_mlm.py) for language-model training: every text's tokens
// concatenated, cut into blocks of block_size, the remainder dropped, so that no token is padding.
#pragma once

#include "berth/data/tokenized_dataset.h"

#include <cstddef>

namespace berth::data {

// dataset: rows of any length -> rows of exactly block_size tokens (attention mask 1, type ids 0, the
// special-tokens mask carried along), no labels (a language model's labels come from its input ids). Fewer
// than block_size tokens in all throws berth::Error with the counts and the fix.
TokenizedDataset pack_blocks(const TokenizedDataset& dataset, size_t block_size);

}  // namespace berth::data
