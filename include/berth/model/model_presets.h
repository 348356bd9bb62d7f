// Model presets: named configs of every family for training from scratch (`berth train --model-preset`).
#pragma once

#include "berth/model/pretrained_config.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace berth {

struct ModelPreset {
  std::string name;         // "bert-tiny", "gpt2-tiny", ...
  std::string description;  // "BERT, 2 layers, hidden 128" for --help and errors
  std::function<PretrainedConfig(int64_t vocab_size)> config;
};

// Every preset, BERT's first.
const std::vector<ModelPreset>& model_presets();
std::vector<std::string> model_preset_names();
// The names joined for messages and --help: "bert-tiny, bert-mini, ...".
std::string model_preset_list();
// The preset's config.json for a tokenizer of `vocab_size` rows; an unknown name throws berth::Error listing
// the presets.
PretrainedConfig model_preset(const std::string& name, int64_t vocab_size);

}  // namespace berth
