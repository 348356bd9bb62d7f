// tokenizer.json and tokenizer_config.json of a trained byte-level BPE, as HF tokenizers and transformers
// write them.
#include "berth/tokenizer/byte_level_bpe_files.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"

namespace berth::tokenizer {
namespace {

// HF's serialisation of pre_tokenizers.ByteLevel, decoders.ByteLevel and processors.ByteLevel.
nlohmann::ordered_json byte_level(bool add_prefix_space) {
  nlohmann::ordered_json json;
  json["type"] = "ByteLevel";
  json["add_prefix_space"] = add_prefix_space;
  json["trim_offsets"] = true;
  json["use_regex"] = true;
  return json;
}

nlohmann::ordered_json bpe_model(const TrainedBpe& bpe) {
  nlohmann::ordered_json model;
  model["type"] = "BPE";
  model["dropout"] = nullptr;
  model["unk_token"] = nullptr;
  model["continuing_subword_prefix"] = nullptr;
  model["end_of_word_suffix"] = nullptr;
  model["fuse_unk"] = false;
  model["byte_fallback"] = false;
  model["ignore_merges"] = false;
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (size_t id = 0; id < bpe.vocab.size(); ++id) vocab[bpe.vocab[id]] = id;
  model["vocab"] = std::move(vocab);
  nlohmann::ordered_json merges = nlohmann::ordered_json::array();
  for (const auto& [left, right] : bpe.merges) merges.push_back(nlohmann::ordered_json::array({left, right}));
  model["merges"] = std::move(merges);
  return model;
}

// Each special token once, with its id, as HF's Tokenizer.train adds the trainer's special tokens.
nlohmann::ordered_json added_tokens(const TrainedBpe& bpe, const std::vector<std::string>& special_tokens) {
  std::unordered_map<std::string, size_t> ids;
  for (size_t id = 0; id < bpe.vocab.size(); ++id) ids.emplace(bpe.vocab[id], id);
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  std::unordered_map<std::string, bool> seen;
  for (const std::string& token : special_tokens) {
    const auto it = ids.find(token);
    BERTH_CHECK(it != ids.end(), "special token '", token,
                "' is not in the trained vocabulary. Fix: train with it among the special tokens");
    if (!seen.emplace(token, true).second) continue;
    nlohmann::ordered_json entry;
    entry["id"] = it->second;
    entry["content"] = token;
    entry["single_word"] = false;
    entry["lstrip"] = false;
    entry["rstrip"] = false;
    entry["normalized"] = false;
    entry["special"] = true;
    added.push_back(std::move(entry));
  }
  return added;
}

// transformers' tokenizer_config.json (keys sorted, as transformers writes them).
nlohmann::json tokenizer_config(const std::vector<std::string>& special_tokens, int64_t model_max_length) {
  nlohmann::json config;
  config["tokenizer_class"] = "PreTrainedTokenizerFast";
  config["model_max_length"] = model_max_length;
  // Decoding gives back the text byte for byte; transformers' clean-up would drop spaces before punctuation.
  config["clean_up_tokenization_spaces"] = false;
  // The roles of the well-known special tokens, in this order of precedence (a role set once stays).
  const std::vector<std::pair<std::string, std::vector<std::string>>> roles = {
      {"<s>", {"bos_token", "cls_token"}},
      {"</s>", {"eos_token", "sep_token"}},
      {"<unk>", {"unk_token"}},
      {"<pad>", {"pad_token"}},
      {"<mask>", {"mask_token"}},
      {"<|begin_of_text|>", {"bos_token"}},
      {"<|end_of_text|>", {"eos_token"}},
      {"<|endoftext|>", {"bos_token", "eos_token", "unk_token"}},
  };
  for (const auto& [token, keys] : roles) {
    if (std::find(special_tokens.begin(), special_tokens.end(), token) == special_tokens.end()) continue;
    for (const std::string& key : keys)
      if (!config.contains(key)) config[key] = token;
  }
  return config;
}

}  // namespace

void write_byte_level_bpe_files(const std::string& dir, const TrainedBpe& bpe,
                                const std::vector<std::string>& special_tokens, bool add_prefix_space,
                                int64_t model_max_length) {
  nlohmann::ordered_json tokenizer;
  tokenizer["version"] = "1.0";
  tokenizer["truncation"] = nullptr;
  tokenizer["padding"] = nullptr;
  tokenizer["added_tokens"] = added_tokens(bpe, special_tokens);
  tokenizer["normalizer"] = nullptr;
  tokenizer["pre_tokenizer"] = byte_level(add_prefix_space);
  // The post-processor's prefix space is the pre-tokenizer's: it keeps the first token's offsets from
  // losing a space the pre-tokenizer added.
  tokenizer["post_processor"] = byte_level(add_prefix_space);
  tokenizer["decoder"] = byte_level(true);
  tokenizer["model"] = bpe_model(bpe);

  std::error_code error;
  std::filesystem::create_directories(dir, error);
  BERTH_CHECK(!error, dir, ": cannot create the folder (", error.message(),
              "). Fix: choose a writable --output");
  write_file_atomically(dir + "/tokenizer.json", tokenizer.dump(2));
  write_file_atomically(dir + "/tokenizer_config.json",
                        tokenizer_config(special_tokens, model_max_length).dump(2) + "\n");
}

}  // namespace berth::tokenizer
