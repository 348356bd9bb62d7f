// Named BERT sizes (bert-tiny ... bert-base) for training from scratch and benchmarks.
#include "berth/model/bert_presets.h"

#include "berth/core/error.h"

#include <array>

namespace berth {
namespace {

struct Preset {
  const char* name;
  int64_t layers, hidden, heads, intermediate;
};

constexpr std::array<Preset, 4> kPresets{{
    {"bert-tiny", 2, 128, 2, 512},
    {"bert-mini", 4, 256, 4, 1024},
    {"bert-small", 4, 512, 8, 2048},
    {"bert-base", 12, 768, 12, 3072},
}};

}  // namespace

std::vector<std::string> bert_preset_names() {
  std::vector<std::string> names;
  for (const auto& preset : kPresets) names.emplace_back(preset.name);
  return names;
}

BertConfig bert_preset(std::string_view name, int64_t vocab_size) {
  for (const auto& preset : kPresets) {
    if (name != preset.name) continue;
    BertConfig config;
    config.vocab_size = vocab_size;
    config.num_hidden_layers = preset.layers;
    config.hidden_size = preset.hidden;
    config.num_attention_heads = preset.heads;
    config.intermediate_size = preset.intermediate;
    config.validate();
    return config;
  }
  std::string known;
  for (const auto& preset : kPresets) known += std::string(known.empty() ? "" : ", ") + preset.name;
  BERTH_FAIL("unknown model preset '", name, "': berth knows ", known,
             ". Fix: pass one of those to --model-preset, or --model DIR for an HF model directory.");
}

}  // namespace berth
