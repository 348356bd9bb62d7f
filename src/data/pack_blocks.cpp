// pack_blocks: concatenate every row's tokens and cut them into full blocks, as run_clm.py's group_texts.
#include "berth/data/pack_blocks.h"

#include "berth/core/error.h"

namespace berth::data {

TokenizedDataset pack_blocks(const TokenizedDataset& dataset, size_t block_size) {
  BERTH_CHECK(block_size > 0, "pack_blocks: block_size must be at least 1. Fix: e.g. --block-size 128");
  size_t total = 0;
  for (const tokenizer::Encoding& e : dataset.encodings()) total += e.ids.size();
  BERTH_CHECK(total >= block_size, "pack_blocks: the ", dataset.size(), " texts hold ", total,
              " tokens in all, fewer than one block of ", block_size,
              ". Fix: a smaller --block-size or more text");
  std::vector<tokenizer::Encoding> blocks(total / block_size);
  size_t filled = 0;  // tokens placed so far
  for (const tokenizer::Encoding& e : dataset.encodings()) {
    // run_mlm.py's group_texts concatenates the special-tokens mask beside the ids (an [SEP] inside a block
    // stays unmaskable); a row without one counts as plain text.
    const bool has_special = e.special_tokens_mask.size() == e.ids.size();
    // Offsets travel too (group_texts concatenates every column): whole-word masking reads words from them.
    const bool has_offsets = e.offsets.size() == e.ids.size();
    for (size_t t = 0; t < e.ids.size(); ++t) {
      const size_t block = filled / block_size;
      if (block == blocks.size()) break;  // the remainder, as group_texts drops it
      blocks[block].ids.push_back(e.ids[t]);
      blocks[block].special_tokens_mask.push_back(has_special ? e.special_tokens_mask[t] : 0);
      blocks[block].offsets.push_back(has_offsets ? e.offsets[t] : std::pair<size_t, size_t>{0, 0});
      ++filled;
    }
  }
  for (tokenizer::Encoding& block : blocks) {
    block.type_ids.assign(block_size, 0);
    block.attention_mask.assign(block_size, 1);
  }
  return TokenizedDataset(std::move(blocks), at::Tensor());
}

}  // namespace berth::data
