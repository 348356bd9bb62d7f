// BertForSequenceClassification: the pooled [CLS] state through dropout and a linear classifier, HF's loss
// for the config's problem type, and the TaskModel view the Trainer trains.
#include "berth/model/bert_for_sequence_classification.h"

#include "berth/core/error.h"
#include "berth/kernels/dropout.h"
#include "berth/kernels/fused.h"
#include "berth/model/pretrained.h"
#include "berth/model/sequence_classification_loss.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/inspect.h"

#include <torch/torch.h>

namespace berth {

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

void BertForSequenceClassificationImpl::set_gradient_checkpointing(const GradientCheckpointing& how) {
  TaskModel::set_gradient_checkpointing(how);
  bert->gradient_checkpointing = how;
}

void BertForSequenceClassificationImpl::set_layer_hooks(std::shared_ptr<LayerHooks> hooks) {
  bert->set_layer_hooks(hooks, "bert.");
  hooks_ = std::move(hooks);
}

TaskOutput BertForSequenceClassificationImpl::forward_batch(const Batch& batch) {
  SequenceClassifierOutput out =
      forward(batch_input_ids(batch, "BertForSequenceClassification"), batch_input(batch, "attention_mask"),
              batch_input(batch, "token_type_ids"), batch_input(batch, "labels"));
  return {out.logits, out.loss};
}

TaskModelInfo BertForSequenceClassificationImpl::info() const {
  TaskModelInfo info;
  info.architecture = "BertForSequenceClassification";
  info.problem_type = problem_type_or_default(config.problem_type, config.num_labels());
  for (const auto& [id, label] : config.id2label) info.labels.push_back(label);
  info.max_positions = config.max_position_embeddings;
  info.summary = model_summary(config.num_hidden_layers, config.hidden_size, config.vocab_size);
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
  return sequence_classification_loss(logits, labels, config.problem_type);
}

}  // namespace berth
