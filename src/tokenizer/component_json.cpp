// Single pipeline components from JSON text, through the readers Tokenizer uses.
#include "berth/tokenizer/component_json.h"

#include <nlohmann/json.hpp>

#include "berth/core/error.h"
#include "pipeline_json.h"

namespace berth::tokenizer {
namespace {

nlohmann::json parse_text(std::string_view json_text, const std::string& path) {
  try {
    return nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    BERTH_FAIL(path, ": not valid JSON (", e.what(),
               "). Fix: pass the component's JSON object as it appears "
               "in tokenizer.json");
  }
}

}  // namespace

std::unique_ptr<Normalizer> normalizer_from_json(std::string_view json_text, const std::string& path) {
  return parse_normalizer(parse_text(json_text, path), path);
}

std::unique_ptr<TokenModel> token_model_from_json(std::string_view json_text, const std::string& path) {
  return parse_token_model(parse_text(json_text, path), path);
}

}  // namespace berth::tokenizer
