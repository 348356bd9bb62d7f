// A tokenizer directory in HF's format: tokenizer.json and/or vocab.txt, plus tokenizer_config.json; loaded
// into a WordPieceTokenizer and written back.
#pragma once

#include <string>

#include "berth/tokenizer/tokenizer.h"
#include "berth/tokenizer/wordpiece_tokenizer.h"

namespace berth::tokenizer {

// Reads dir/tokenizer.json when present (BertNormalizer, BertPreTokenizer, WordPiece, TemplateProcessing or
// BertProcessing, added tokens, truncation, padding), else dir/vocab.txt with BERT's set-up; and
// dir/tokenizer_config.json when present (do_lower_case, strip_accents, tokenize_chinese_chars override the
// normalizer as transformers does; model_max_length; unk/sep/pad/cls/mask token texts). Anything berth does
// not implement is refused with an error naming it; errors name the file (and line for vocab.txt).
WordPieceTokenizer load_tokenizer(const std::string& dir);

// Whether dir holds the BERT WordPiece tokenizer load_tokenizer reads: vocab.txt alone, or a tokenizer.json
// whose model is WordPiece behind BertNormalizer (or none) and BertPreTokenizer. Any other tokenizer.json is
// for load_pipeline_tokenizer.
bool is_bert_wordpiece_dir(const std::string& dir);

// dir/tokenizer.json (any pipeline, see Tokenizer) with tokenizer_config.json's model_max_length and
// pad_token when it has them.
Tokenizer load_pipeline_tokenizer(const std::string& dir);

// Writes vocab.txt, tokenizer_config.json and tokenizer.json (which HF tokenizers and transformers load) into
// dir, creating it if needed; each file is written to a temporary name and renamed into place.
void save_tokenizer(const WordPieceTokenizer& tokenizer, const std::string& dir);

}  // namespace berth::tokenizer
