// Model presets: BERT's sizes and the other families' small from-scratch configs, as PretrainedConfigs.
#include "berth/model/model_presets.h"

#include "berth/core/error.h"
#include "berth/model/bert_presets.h"
#include "core/text.h"

namespace berth {
namespace {

// GPT-2's own defaults at a size that trains in minutes on a CPU.
PretrainedConfig gpt2_tiny_preset(int64_t vocab_size) {
  PretrainedConfig config("gpt2");
  config.set_int("vocab_size", vocab_size);
  config.set_int("n_positions", 512);
  config.set_int("n_embd", 128);
  config.set_int("n_layer", 2);
  config.set_int("n_head", 4);
  config.set_null("n_inner");
  config.set_string("activation_function", "gelu_new");
  config.set_number("layer_norm_epsilon", 1e-5);
  config.set_number("initializer_range", 0.02);
  config.set_bool("tie_word_embeddings", true);
  // GPT2Config's defaults (50256) are GPT-2's own vocabulary; the preset's tokenizer is another.
  config.set_null("bos_token_id");
  config.set_null("eos_token_id");
  return config;
}

// A small Llama with grouped-query attention (2 key/value heads for 4 query heads) and tied embeddings.
PretrainedConfig llama_tiny_preset(int64_t vocab_size) {
  PretrainedConfig config("llama");
  config.set_int("vocab_size", vocab_size);
  config.set_int("hidden_size", 128);
  config.set_int("intermediate_size", 344);
  config.set_int("num_hidden_layers", 2);
  config.set_int("num_attention_heads", 4);
  config.set_int("num_key_value_heads", 2);
  config.set_int("max_position_embeddings", 512);
  config.set_string("hidden_act", "silu");
  config.set_number("rms_norm_eps", 1e-6);
  config.set_number("initializer_range", 0.02);
  config.set_bool("tie_word_embeddings", true);
  config.set_json("rope_parameters", R"({"rope_theta": 10000.0, "rope_type": "default"})");
  // LlamaConfig's defaults (1 and 2) name Llama's own tokenizer's ids; the preset's tokenizer is another.
  config.set_null("bos_token_id");
  config.set_null("eos_token_id");
  return config;
}

// DeBERTa-v3's shape (microsoft/deberta-v3-*: shared position projections, 256 log-bucketed relative
// positions, no absolute positions or token types) at a size that trains in minutes on a CPU.
PretrainedConfig deberta_v3_tiny_preset(int64_t vocab_size) {
  PretrainedConfig config("deberta-v2");
  config.set_int("vocab_size", vocab_size);
  config.set_int("hidden_size", 128);
  config.set_int("intermediate_size", 512);
  config.set_int("num_hidden_layers", 2);
  config.set_int("num_attention_heads", 4);
  config.set_int("max_position_embeddings", 512);
  config.set_int("type_vocab_size", 0);
  config.set_string("hidden_act", "gelu");
  config.set_number("layer_norm_eps", 1e-7);
  config.set_number("initializer_range", 0.02);
  config.set_number("hidden_dropout_prob", 0.1);
  config.set_number("attention_probs_dropout_prob", 0.1);
  config.set_bool("relative_attention", true);
  config.set_int("position_buckets", 256);
  config.set_int("max_relative_positions", -1);
  config.set_string("norm_rel_ebd", "layer_norm");
  config.set_bool("share_att_key", true);
  config.set_json("pos_att_type", R"(["p2c", "c2p"])");
  config.set_bool("position_biased_input", false);
  config.set_int("pooler_hidden_size", 128);
  config.set_number("pooler_dropout", 0);
  config.set_string("pooler_hidden_act", "gelu");
  config.set_int("pad_token_id", 0);
  return config;
}

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
  presets.push_back({"gpt2-tiny", "GPT-2, 2 layers, hidden 128", gpt2_tiny_preset});
  presets.push_back({"llama-tiny", "Llama, 2 layers, hidden 128", llama_tiny_preset});
  presets.push_back({"deberta-v3-tiny", "DeBERTa-v3, 2 layers, hidden 128", deberta_v3_tiny_preset});
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

std::string model_preset_list() { return text::join(model_preset_names(), ", "); }

PretrainedConfig model_preset(const std::string& name, int64_t vocab_size) {
  for (const ModelPreset& preset : model_presets())
    if (preset.name == name) return preset.config(vocab_size);
  BERTH_FAIL("unknown model preset \"", name, "\"; berth's presets are ", model_preset_list(),
             ". Fix: pass one of those to --model-preset, or --model DIR for a pretrained model");
}

}  // namespace berth
