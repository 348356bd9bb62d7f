// BertForSequenceClassification: the pooled [CLS] state through dropout and a linear classifier, HF's loss
// for the config's problem type, and the TaskModel view the Trainer trains.
#include "berth/model/bert_for_sequence_classification.h"

#include "berth/core/error.h"
#include "berth/kernels/dropout.h"
#include "berth/kernels/fused.h"
#include "berth/model/pretrained.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/inspect.h"

#include <torch/torch.h>

namespace berth {
namespace {

namespace F = torch::nn::functional;

std::string shape_of(const at::Tensor& t) { return format_shape(t.sizes()); }

// The batch's tensor `name`, or an undefined tensor when the batch has none.
at::Tensor optional_input(const Batch& batch, const std::string& name) {
  auto it = batch.find(name);
  return it == batch.end() ? at::Tensor() : it->second;
}

// "input_ids, labels": the batch's tensor names, for error messages.
std::string batch_names(const Batch& batch) {
  std::string names;
  for (const auto& [name, tensor] : batch) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "nothing" : names;
}

}  // namespace

BertForSequenceClassificationImpl::BertForSequenceClassificationImpl(const BertConfig& bert_config,
                                                                     const BertInitOptions& init)
    : config(bert_config) {
  config.validate();
  bert = register_module("bert", BertModel(config, BertInitOptions{/*random=*/false, std::nullopt}));
  dropout = register_module("dropout", torch::nn::Dropout(config.classifier_dropout_or_default()));
  classifier = register_module("classifier", torch::nn::Linear(config.hidden_size, config.num_labels()));
  if (init.random) init_bert_weights(*this, config.initializer_range, init.seed);
}

SequenceClassifierOutput BertForSequenceClassificationImpl::forward(const at::Tensor& input_ids,
                                                                    const at::Tensor& attention_mask,
                                                                    const at::Tensor& token_type_ids,
                                                                    const at::Tensor& labels) {
  BertModelOutput out = bert(input_ids, attention_mask, token_type_ids);
  // (B, C) -> (B, num_labels)
  at::Tensor pooled = is_training() && kernels::use_fused(out.pooler_output)
                          ? kernels::dropout(out.pooler_output, dropout->options.p(), true)
                          : dropout(out.pooler_output);
  at::Tensor logits =
      hooks_ ? hooks_->after_forward("classifier", classifier(hooks_->before_forward("classifier", pooled)))
             : classifier(pooled);
  if (!labels.defined()) return {logits, {}};
  return {logits, loss(logits, labels)};
}

void BertForSequenceClassificationImpl::set_layer_hooks(std::shared_ptr<LayerHooks> hooks) {
  bert->set_layer_hooks(hooks, "bert.");
  hooks_ = std::move(hooks);
}

TaskOutput BertForSequenceClassificationImpl::forward_batch(const Batch& batch) {
  auto ids = batch.find("input_ids");
  BERTH_CHECK(ids != batch.end(), "BertForSequenceClassification: the batch has no input_ids (it has ",
              batch_names(batch), "). Fix: tokenise the text into input_ids (and attention_mask)");
  SequenceClassifierOutput out =
      forward(ids->second, optional_input(batch, "attention_mask"), optional_input(batch, "token_type_ids"),
              optional_input(batch, "labels"));
  return {out.logits, out.loss};
}

TaskModelInfo BertForSequenceClassificationImpl::info() const {
  TaskModelInfo info;
  info.architecture = "BertForSequenceClassification";
  // HF's pipeline rule when the config does not say: one label is a regression score, more are classes.
  info.problem_type =
      config.problem_type.value_or(config.num_labels() == 1 ? kRegression : kSingleLabelClassification);
  for (const auto& [id, label] : config.id2label) info.labels.push_back(label);
  info.max_positions = config.max_position_embeddings;
  info.summary = std::to_string(config.num_hidden_layers) + " layers, hidden " +
                 std::to_string(config.hidden_size) + ", vocab " + std::to_string(config.vocab_size);
  return info;
}

void BertForSequenceClassificationImpl::save_pretrained(const std::string& dir) const {
  berth::save_pretrained(*this, dir);
}

std::vector<std::string> BertForSequenceClassificationImpl::hook_blocks() const {
  std::vector<std::string> blocks = bert->hook_blocks("bert.");
  blocks.push_back("classifier");
  return blocks;
}

at::Tensor BertForSequenceClassificationImpl::loss(const at::Tensor& logits, const at::Tensor& labels) {
  check_tensor_on(labels, "labels", logits.device());
  const int64_t num_labels = config.num_labels();
  const bool integer_labels = labels.scalar_type() == at::kLong || labels.scalar_type() == at::kInt;
  if (!config.problem_type) {
    config.problem_type = num_labels == 1  ? kRegression
                          : integer_labels ? kSingleLabelClassification
                                           : kMultiLabelClassification;
  }
  const std::string& problem = *config.problem_type;
  const int64_t batch = logits.size(0);
  if (problem == kRegression) {
    if (num_labels == 1) {
      BERTH_CHECK(labels.numel() == batch, "regression labels must hold one value per example (", batch,
                  "), found shape ", shape_of(labels));
      return F::mse_loss(logits.squeeze(), labels.squeeze().to(logits.scalar_type()));
    }
    BERTH_CHECK(labels.sizes() == logits.sizes(), "regression labels must match the logits' shape ",
                shape_of(logits), " (one target per output), found ", shape_of(labels));
    return F::mse_loss(logits, labels.to(logits.scalar_type()));
  }
  if (problem == kSingleLabelClassification) {
    BERTH_CHECK(integer_labels, "single_label_classification needs integer class ids as labels, found ",
                dtype_name(labels.scalar_type()), ". Fix: pass int64 labels in 0..", num_labels - 1,
                ", or set problem_type to multi_label_classification for 0/1 float targets");
    BERTH_CHECK(labels.numel() == batch,
                "single_label_classification labels must hold one class id per example (", batch,
                "), found shape ", shape_of(labels));
    // (B, num_labels) against (B,): -100 marks an example left out of the mean, as in HF.
    return F::cross_entropy(logits.view({-1, num_labels}), labels.reshape({-1}).to(at::kLong));
  }
  BERTH_CHECK(
      labels.sizes() == logits.sizes(), "multi_label_classification labels must match the logits' shape ",
      shape_of(logits), " (one 0/1 target per label), found ", shape_of(labels),
      ". Fix: pass multi-hot float labels, or int64 class ids with problem_type single_label_classification");
  return F::binary_cross_entropy_with_logits(logits, labels.to(logits.scalar_type()));
}

}  // namespace berth
