// BERT's masked-language-model head (HF's cls.predictions): the transform, then the word embeddings as the
// output layer plus the head's own bias.
#pragma once

#include "berth/model/bert_config.h"
#include "berth/model/bert_model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

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

}  // namespace berth
