// read_tokenizer_json: a tokenizer.json read in one pass, the model's vocabulary and merges (hundreds of
// thousands of entries) straight into arrays and the rest as JSON (private to the library).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace berth::tokenizer {

// model.vocab and model.merges, when they have the shapes HF writes; the JSON then holds null in their place.
struct ModelArrays {
  std::optional<std::vector<std::pair<std::string, int64_t>>> vocab;  // {"token": id, ...}
  std::optional<std::vector<std::pair<std::string, double>>> scores;  // [["piece", score], ...] (Unigram)
  std::optional<std::vector<std::pair<std::string, std::string>>>
      merges;  // ["a b", ...] or [["a", "b"], ...]
};

struct TokenizerJson {
  nlohmann::json root;
  ModelArrays model;
};

// Throws berth::Error naming `source` when text is not JSON. Arrays of any other shape stay in the JSON, for
// the component readers to refuse with their path.
TokenizerJson read_tokenizer_json(std::string_view text, const std::string& source);

}  // namespace berth::tokenizer
