// BertForSequenceClassification: HF's BERT with a classification head, berth's first TaskModel.
#pragma once

#include "berth/model/bert_config.h"
#include "berth/model/bert_model.h"
#include "berth/model/task_model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <string>
#include <vector>

namespace berth {

struct SequenceClassifierOutput {
  at::Tensor logits;  // (B, num_labels)
  at::Tensor loss;    // scalar; undefined when no labels were given
};

// HF's BertForSequenceClassification: bert.* + dropout + classifier.{weight,bias}.
struct BertForSequenceClassificationImpl : torch::nn::Module, TaskModel {
  explicit BertForSequenceClassificationImpl(const BertConfig& config, const BertInitOptions& init = {});
  // As BertModel's forward, plus labels: (B,) int64 class ids for single-label classification (-100 is
  // ignored), (B,) or (B, num_labels) floats for regression, (B, num_labels) 0/1 floats for multi-label.
  // The loss follows config.problem_type; when that is unset it is chosen as HF chooses (regression for
  // one label, single-label for integer labels, else multi-label) and, as in HF, recorded in config.
  SequenceClassifierOutput forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                                   const at::Tensor& token_type_ids = {}, const at::Tensor& labels = {});

  // TaskModel: the batch's input_ids, attention_mask, token_type_ids and labels, as the forward above.
  TaskOutput forward_batch(const Batch& batch) override;
  // HF's loss for these logits (B, num_labels) and labels, by problem_type (see forward).
  at::Tensor loss(const at::Tensor& logits, const at::Tensor& labels) override;
  torch::nn::Module& module() override { return *this; }
  TaskModelInfo info() const override;
  void save_pretrained(const std::string& dir) const override;
  // "bert.embeddings", "bert.encoder.layer.<i>", "bert.pooler", "classifier" (model/layer_hooks.h; ZeRO
  // stage 3 gathers and releases parameters there).
  std::vector<std::string> hook_blocks() const override;
  void set_layer_hooks(std::shared_ptr<LayerHooks> hooks) override;
  void set_gradient_checkpointing(const GradientCheckpointing& how) override;
  bool supports_gradient_checkpointing() const override { return true; }

  BertConfig config;
  BertModel bert{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear classifier{nullptr};

 private:
  std::shared_ptr<LayerHooks> hooks_;
};
TORCH_MODULE(BertForSequenceClassification);

}  // namespace berth
