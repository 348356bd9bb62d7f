// One component of a tokenizer.json pipeline from its JSON text, read exactly as Tokenizer reads it inside
// the whole file: for tools and tests that run a single normalizer or model.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "berth/tokenizer/normalizer.h"
#include "berth/tokenizer/token_model.h"

namespace berth::tokenizer {

// The normalizer `json_text` describes ("null": nullptr), e.g. {"type": "NFKC"}. Throws berth::Error naming
// `path` (as in "normalizer.normalizers[0].type") for text that is not JSON or a component berth refuses.
std::unique_ptr<Normalizer> normalizer_from_json(std::string_view json_text,
                                                 const std::string& path = "normalizer");

// The model `json_text` describes, e.g. {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]]}. Throws
// berth::Error naming `path` for text that is not JSON or a model berth refuses.
std::unique_ptr<TokenModel> token_model_from_json(std::string_view json_text,
                                                  const std::string& path = "model");

}  // namespace berth::tokenizer
