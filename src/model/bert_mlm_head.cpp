// BERT's masked-LM head: HF's prediction-head transform (dense, activation, LayerNorm) and the tied decoder.
#include "berth/model/bert_mlm_head.h"

#include <torch/torch.h>

namespace berth {

BertPredictionHeadTransformImpl::BertPredictionHeadTransformImpl(const BertConfig& config)
    : activation(parse_activation(config.hidden_act)) {
  dense = register_module("dense", torch::nn::Linear(config.hidden_size, config.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size}).eps(config.layer_norm_eps)));
}

at::Tensor BertPredictionHeadTransformImpl::forward(const at::Tensor& hidden) {
  return LayerNorm(apply_activation(activation, dense(hidden)));
}

BertLmPredictionHeadImpl::BertLmPredictionHeadImpl(const BertConfig& config) {
  transform = register_module("transform", BertPredictionHeadTransform(config));
  bias = register_parameter("bias", torch::zeros({config.vocab_size}));
}

at::Tensor BertLmPredictionHeadImpl::forward(const at::Tensor& hidden, const at::Tensor& word_embeddings) {
  return torch::nn::functional::linear(transform(hidden), word_embeddings, bias);
}

BertOnlyMlmHeadImpl::BertOnlyMlmHeadImpl(const BertConfig& config) {
  predictions = register_module("predictions", BertLmPredictionHead(config));
}

}  // namespace berth
