// HF model directories: loading with HF's prefix, legacy-name and missing/unexpected-key rules; saving as HF
// does.
#include "berth/model/pretrained.h"

#include "berth/model/checkpoint_io.h"

#include "berth/core/error.h"
#include "berth/placement/inspect.h"

#include <torch/torch.h>

#include <filesystem>

namespace berth {
namespace {

namespace fs = std::filesystem;

template <typename Model>
struct ModelTraits;

template <>
struct ModelTraits<BertModel> {
  static constexpr const char* kName = "BertModel";
  static BertModel build(const BertConfig& config) {
    return BertModel(config, BertInitOptions{false, std::nullopt});
  }
};

template <>
struct ModelTraits<BertForSequenceClassification> {
  static constexpr const char* kName = "BertForSequenceClassification";
  static BertForSequenceClassification build(const BertConfig& config) {
    return BertForSequenceClassification(config, BertInitOptions{false, std::nullopt});
  }
};

// BERT's checkpoint names: HF's BertPreTrainedModel rules.
CheckpointLayout bert_layout(const char* architecture) {
  CheckpointLayout layout;
  layout.architecture = architecture;
  layout.base_prefix = "bert.";
  // Buffers older transformers saved (persistent then, non-persistent now): HF drops them silently.
  layout.ignored = {"embeddings.position_ids", "embeddings.token_type_ids"};
  layout.head_prefixes = {"classifier."};
  return layout;
}

}  // namespace

template <typename Model>
Pretrained<Model> from_pretrained(const std::string& dir_text, const PretrainedOptions& options) {
  const fs::path dir(dir_text);
  check_model_dir(dir_text, options);

  std::vector<std::string> config_warnings;
  BertConfig config = BertConfig::load((dir / "config.json").string(), &config_warnings);
  if (options.labels) config.set_labels(*options.labels);
  if (options.num_labels) config.set_num_labels(*options.num_labels);
  if (options.problem_type) config.problem_type = *options.problem_type;
  Model model = ModelTraits<Model>::build(config);
  model->to(options.dtype);
  CheckpointLayout layout = bert_layout(ModelTraits<Model>::kName);
  layout.init = [&config](torch::nn::Module& module, std::optional<uint64_t> seed) {
    init_bert_weights(module, config.initializer_range, seed);
  };
  Pretrained<Model> result;
  result.report = load_weights(*model, dir_text, layout, options, config.num_labels());
  // config.json's warnings come first, as HF logs them.
  std::vector<std::string>& warnings = result.report.warnings;
  warnings.insert(warnings.begin(), config_warnings.begin(), config_warnings.end());
  result.model = model;
  return result;
}

template Pretrained<BertModel> from_pretrained<BertModel>(const std::string&, const PretrainedOptions&);
template Pretrained<BertForSequenceClassification> from_pretrained<BertForSequenceClassification>(
    const std::string&, const PretrainedOptions&);

namespace {

void save_model(const torch::nn::Module& module, BertConfig config, const std::string& architecture,
                const std::string& dir) {
  config.torch_dtype = save_module_tensors(module, dir);
  config.architectures = std::vector<std::string>{architecture};
  config.save((fs::path(dir) / "config.json").string());
}

}  // namespace

void save_pretrained(const BertModelImpl& model, const std::string& dir) {
  save_model(model, model.config, "BertModel", dir);
}

void save_pretrained(const BertForSequenceClassificationImpl& model, const std::string& dir) {
  save_model(model, model.config, "BertForSequenceClassification", dir);
}

}  // namespace berth
