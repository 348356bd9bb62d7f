// The readers of tokenizer.json's pipeline components, each naming the JSON path of what it refuses
// (private to the library).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "berth/tokenizer/decoder.h"
#include "berth/tokenizer/normalizer.h"
#include "berth/tokenizer/post_processor.h"
#include "berth/tokenizer/pre_tokenizer.h"
#include "berth/tokenizer/token_model.h"
#include "berth/tokenizer/wordpiece.h"
#include "tokenizer_json.h"

namespace berth::tokenizer {

class JsonFields;

// The normalizer tokenizer.json describes at `path` (e.g. "normalizer.normalizers[1]"); null: none
// (nullptr). Throws berth::Error naming the path for an unknown type or a missing or mistyped field.
std::unique_ptr<Normalizer> parse_normalizer(const nlohmann::json& json, const std::string& path);

// The components whose "type" is checked by the readers above, each from its JSON object: Precompiled
// (SentencePiece's charsmap), BertNormalizer, Unigram. Throw berth::Error naming the JSON path of what they
// refuse.
std::unique_ptr<Normalizer> parse_precompiled(const JsonFields& fields);
std::unique_ptr<Normalizer> parse_bert_normalizer(const JsonFields& fields);
std::unique_ptr<TokenModel> parse_unigram(const JsonFields& fields, ModelArrays& arrays);

// The WordPiece inside a model parse_token_model made, or null for another model.
const WordPiece* as_wordpiece(const TokenModel& model);

// The pre-tokenizer tokenizer.json describes at `path`; null: none (nullptr). Throws berth::Error naming the
// path for an unknown type or a missing or mistyped field.
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const nlohmann::json& json, const std::string& path);

// The model tokenizer.json describes at `path` ("model"), its vocabulary and merges from `arrays` where the
// reader put them there. Throws berth::Error naming the path for an unknown type, a merge of tokens outside
// the vocabulary, or a missing or mistyped field.
std::unique_ptr<TokenModel> parse_token_model(const nlohmann::json& json, const std::string& path,
                                              ModelArrays arrays = {});

// The post-processor tokenizer.json describes at `path`; null: none (nullptr; sequences are concatenated).
// Throws berth::Error naming the path for an unknown type or a missing or mistyped field.
std::unique_ptr<PostProcessor> parse_post_processor(const nlohmann::json& json, const std::string& path,
                                                    const TokenText& token_text, size_t ids);

// The decoder tokenizer.json describes at `path`; null: none (nullptr; decode joins tokens with spaces).
std::unique_ptr<Decoder> parse_decoder(const nlohmann::json& json, const std::string& path);

}  // namespace berth::tokenizer
