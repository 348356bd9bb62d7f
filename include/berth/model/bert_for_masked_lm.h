// BertForMaskedLM: HF's BERT with its masked-language-model head (cls.predictions), the output layer tied to
// the word embeddings, for masked-LM pretraining (`berth train --task masked-lm`).
#pragma once

#include "berth/model/bert_config.h"
#include "berth/model/bert_model.h"
#include "berth/model/task_model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <string>
#include <vector>

namespace berth {

// HF's BertPredictionHeadTransform (cls.predictions.transform): dense, hidden_act, LayerNorm.
struct BertPredictionHeadTransformImpl : torch::nn::Module {
  explicit BertPredictionHeadTransformImpl(const BertConfig& config);
  // hidden: (B, T, C) -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden);

  Activation activation = Activation::Gelu;
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // HF's attribute name, so the checkpoint names match
};
TORCH_MODULE(BertPredictionHeadTransform);

// HF's BertLMPredictionHead (cls.predictions): the transform, then the word embeddings as the output layer
// (tied: not a tensor here) plus its own bias.
struct BertLmPredictionHeadImpl : torch::nn::Module {
  explicit BertLmPredictionHeadImpl(const BertConfig& config);
  // hidden: (B, T, C), word_embeddings: (V, C) -> logits (B, T, V)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& word_embeddings);

  BertPredictionHeadTransform transform{nullptr};
  at::Tensor bias;  // (V)
};
TORCH_MODULE(BertLmPredictionHead);

// HF's BertOnlyMLMHead ("cls"): holds "predictions".
struct BertOnlyMlmHeadImpl : torch::nn::Module {
  explicit BertOnlyMlmHeadImpl(const BertConfig& config);
  BertLmPredictionHead predictions{nullptr};
};
TORCH_MODULE(BertOnlyMlmHead);

// HF's BertForMaskedLM: bert.* without the pooler, cls.predictions.*; the loss is cross-entropy over the
// vocabulary at the positions whose label is not -100.
struct BertForMaskedLmImpl : torch::nn::Module, TaskModel {
  explicit BertForMaskedLmImpl(const BertConfig& config, const BertInitOptions& init = {});
  // input_ids, attention_mask, token_type_ids: (B, T) -> logits (B, T, V)
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                     const at::Tensor& token_type_ids = {});

  TaskOutput forward_batch(const Batch& batch) override;
  // logits (B, T, V), labels (B, T) (-100: not predicted) -> scalar
  at::Tensor loss(const at::Tensor& logits, const at::Tensor& labels) override;
  torch::nn::Module& module() override { return *this; }
  TaskModelInfo info() const override;
  void save_pretrained(const std::string& dir) const override;
  // "bert.embeddings", "bert.encoder.layer.<i>", "cls", then "bert.embeddings" again: the tied output
  // layer's use, inside "cls".
  std::vector<std::string> hook_blocks() const override;
  void set_layer_hooks(std::shared_ptr<LayerHooks> hooks) override;
  void set_gradient_checkpointing(const GradientCheckpointing& how) override;
  bool supports_gradient_checkpointing() const override { return true; }

  BertConfig config;
  BertModel bert{nullptr};
  BertOnlyMlmHead cls{nullptr};

 private:
  std::shared_ptr<LayerHooks> hooks_;
};
TORCH_MODULE(BertForMaskedLm);

}  // namespace berth
