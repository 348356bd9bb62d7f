// Pieces the encoder families share: BERT-named config fields as a BertConfig for BERT's layers, Python's
// nn.Linear arithmetic, and the first-token classification head of RoBERTa and ELECTRA.
#pragma once

#include "berth/model/bert_config.h"
#include "berth/model/pretrained_config.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>

namespace berth {

// A RoBERTa or ELECTRA config.json's BERT-named fields (HF's defaults where absent) as a BertConfig, for
// BERT's encoder layers. Fields berth does not implement (is_decoder, add_cross_attention, a relative
// position_embedding_type, an unknown hidden_act) throw berth::Error naming the field at its line.
BertConfig bert_layers_config(const PretrainedConfig& config, int64_t default_pad_token_id);

// x: (..., in) -> (..., out), as Python's nn.Linear computes it (one GEMM with the bias folded in).
at::Tensor linear_as_python(const torch::nn::Linear& layer, const at::Tensor& x);

// HF's RobertaClassificationHead / ElectraClassificationHead: the first token through dropout, dense, an
// activation (tanh in RoBERTa, GELU in ELECTRA), dropout and out_proj.
struct FirstTokenClassifierImpl : torch::nn::Module {
  FirstTokenClassifierImpl(int64_t hidden_size, int64_t num_labels, double dropout_p,
                           std::function<at::Tensor(const at::Tensor&)> activation);
  // hidden: (B, T, C) -> (B, num_labels)
  at::Tensor forward(const at::Tensor& hidden);

  torch::nn::Linear dense{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear out_proj{nullptr};
  std::function<at::Tensor(const at::Tensor&)> activation;
};
TORCH_MODULE(FirstTokenClassifier);

// An output layer whose weight is the word embeddings (tied, so not a tensor here) and whose bias is its own:
// DistilBERT's vocab_projector, ELECTRA's generator_lm_head. Holds only `bias`.
struct TiedDecoderImpl : torch::nn::Module {
  explicit TiedDecoderImpl(int64_t vocab_size);
  // x: (B, T, E), word_embeddings: (V, E) -> (B, T, V)
  at::Tensor forward(const at::Tensor& x, const at::Tensor& word_embeddings);

  at::Tensor bias;
};
TORCH_MODULE(TiedDecoder);

}  // namespace berth
