// A tokenizer directory in HF's format (tokenizer.json or vocab.txt, with tokenizer_config.json), read as
// transformers' AutoTokenizer reads it, and written back.
#pragma once

#include <string>

#include "berth/tokenizer/tokenizer.h"

namespace berth::tokenizer {

// Reads dir/tokenizer.json (any pipeline, see Tokenizer) or, without one, dir/vocab.txt with BERT's set-up as
// transformers' BertTokenizerFast builds it; then dir/tokenizer_config.json when present, applied as
// transformers (5.x) applies it: model_max_length, the special tokens by role (unk, sep, pad, cls, mask, bos,
// eos; BERT's defaults for a WordPiece model), and do_lower_case / strip_accents / tokenize_chinese_chars
// over a BertNormalizer. add_bos_token / add_eos_token change nothing, as in transformers 5: its tokenizers
// read them only when they build a pipeline without tokenizer.json, whose post_processor otherwise decides.
// Errors name the file and what in it is wrong.
Tokenizer load_tokenizer(const std::string& dir);

// Writes dir/tokenizer.json (as it was read), dir/tokenizer_config.json (as read, with the tokenizer's
// model_max_length and special tokens) and, for a WordPiece model, dir/vocab.txt, which transformers' slow
// BertTokenizer reads; each through a temporary file and a rename. Creates dir if needed.
void save_tokenizer(const Tokenizer& tokenizer, const std::string& dir);

}  // namespace berth::tokenizer
