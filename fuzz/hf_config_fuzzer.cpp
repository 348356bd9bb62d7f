// libFuzzer target: config.json as PretrainedConfig and BertConfig read it. Any input is refused with a
// berth::Error or read into a config that writes back to text which reads to the same config.
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "berth/model/bert_config.h"
#include "berth/model/pretrained_config.h"
#include "berth/train/deepspeed_config.h"
#include "fuzz_support.h"

namespace {

constexpr const char* kTarget = "hf_config_fuzzer";

// The typed getters the model families call: a value of another type is a berth::Error, not a
// nlohmann::json::type_error.
void read_common_fields(const berth::PretrainedConfig& config) {
  for (const char* field :
       {"hidden_size", "num_hidden_layers", "vocab_size", "max_position_embeddings", "n_embd", "pad_token_id",
        "rope_theta", "layer_norm_eps", "tie_word_embeddings", "hidden_act", "rope_scaling"}) {
    try {
      (void)config.has(field);
      (void)config.get_optional_int(field, std::nullopt);
    } catch (const berth::Error&) {
    }
    try {
      (void)config.get_optional_number(field, std::nullopt);
    } catch (const berth::Error&) {
    }
    try {
      (void)config.get_bool(field, false);
    } catch (const berth::Error&) {
    }
    try {
      (void)config.get_optional_string(field, std::nullopt);
    } catch (const berth::Error&) {
    }
    try {
      (void)config.get_json(field);
    } catch (const berth::Error&) {
    }
  }
  try {
    (void)berth::train::model_hidden_size(config);
  } catch (const berth::Error&) {
  }
}

void check_pretrained(const std::string& text) {
  std::vector<std::string> warnings;
  berth::PretrainedConfig config;
  try {
    config = berth::PretrainedConfig::from_json_text(text, "fuzz/config.json", &warnings);
  } catch (const berth::Error&) {
    return;
  }
  read_common_fields(config);
  for (const auto& [id, name] : config.id2label)
    berth_fuzz::require(id >= 0 && id < config.num_labels(), kTarget, "label ids are 0..num_labels-1");
  const std::string written = config.to_json_text();
  const auto again = berth::PretrainedConfig::from_json_text(written, "round trip");
  berth_fuzz::require(again.model_type() == config.model_type(), kTarget, "model_type survives a round trip");
  berth_fuzz::require(again.id2label == config.id2label && again.label2id == config.label2id, kTarget,
                      "labels survive a round trip");
  berth_fuzz::require(again.problem_type == config.problem_type, kTarget,
                      "problem_type survives a round trip");
  berth_fuzz::require(again.to_json_text() == written, kTarget, "written text reads back to itself");
}

void check_bert(const std::string& text) {
  berth::BertConfig config;
  try {
    config = berth::BertConfig::from_json_text(text, "fuzz/config.json");
  } catch (const berth::Error&) {
    return;
  }
  berth_fuzz::require(config.num_attention_heads > 0 && config.hidden_size % config.num_attention_heads == 0,
                      kTarget, "validated heads divide hidden_size");
  const std::string written = config.to_json_text();
  const auto again = berth::BertConfig::from_json_text(written, "round trip");
  berth_fuzz::require(again.to_json_text() == written, kTarget, "BertConfig text reads back to itself");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = berth_fuzz::text_of(data, size);
  check_pretrained(text);
  check_bert(text);
  return 0;
}
