// Writing a trained byte-level BPE (GPT-2, RoBERTa, Llama 3 style) as a tokenizer directory that HF
// tokenizers, transformers and berth's pipeline load: tokenizer.json and tokenizer_config.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "berth/tokenizer/bpe_trainer.h"

namespace berth::tokenizer {

// Writes `dir`/tokenizer.json as HF tokenizers saves a Tokenizer(models.BPE()) trained behind
// pre_tokenizers.ByteLevel(add_prefix_space): the BPE model with `bpe`'s vocab and merges, the ByteLevel
// pre-tokenizer, decoder and post-processor (trim_offsets, its prefix space as the pre-tokenizer's), and
// `special_tokens` as special added tokens. Then `dir`/tokenizer_config.json for transformers'
// PreTrainedTokenizerFast: model_max_length and the roles of well-known special tokens (<s> bos and cls, </s>
// eos and sep, <unk>, <pad>, <mask>, <|endoftext|> bos/eos/unk as GPT-2's, <|begin_of_text|> and
// <|end_of_text|> as Llama 3's). Each file goes through a temporary name and a rename; `dir` is created if
// needed. A special token missing from the vocab throws berth::Error.
void write_byte_level_bpe_files(const std::string& dir, const TrainedBpe& bpe,
                                const std::vector<std::string>& special_tokens, bool add_prefix_space,
                                int64_t model_max_length = 512);

}  // namespace berth::tokenizer
