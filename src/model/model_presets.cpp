// Model presets: BERT's sizes and the other families' small from-scratch configs, as PretrainedConfigs.
#include "berth/model/model_presets.h"

#include "berth/core/error.h"
#include "berth/model/bert_presets.h"
#include "core/text.h"

namespace berth {
namespace {

std::vector<ModelPreset> make_presets() {
  std::vector<ModelPreset> presets;
  for (const std::string& name : bert_preset_names()) {
    const BertConfig sizes = bert_preset(name);
    presets.push_back({name,
                       "BERT, " + std::to_string(sizes.num_hidden_layers) + " layers, hidden " +
                           std::to_string(sizes.hidden_size),
                       [name](int64_t vocab_size) {
                         return PretrainedConfig::from_json_text(bert_preset(name, vocab_size).to_json_text(),
                                                                 "preset " + name);
                       }});
  }
  return presets;
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = make_presets();
  return presets;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const ModelPreset& preset : model_presets()) names.push_back(preset.name);
  return names;
}

PretrainedConfig model_preset(const std::string& name, int64_t vocab_size) {
  for (const ModelPreset& preset : model_presets())
    if (preset.name == name) return preset.config(vocab_size);
  BERTH_FAIL("unknown model preset \"", name, "\"; berth's presets are ",
             text::join(model_preset_names(), ", "),
             ". Fix: pass one of those to --model-preset, or --model DIR for a pretrained model");
}

}  // namespace berth
