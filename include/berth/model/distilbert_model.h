// DistilBERT: HF's DistilBertModel (embeddings without token types, post-norm transformer blocks with q_lin /
// k_lin / v_lin / out_lin attention) and its sequence/token classification, masked-LM and question-answering
// heads, under HF's parameter names.
#pragma once

#include "berth/model/auto_model.h"
#include "berth/model/bert_model.h"
#include "berth/model/encoder_heads.h"
#include "berth/model/encoder_task_model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>
#include <string>

namespace berth {

// DistilBertConfig's fields (HF's names in the comments where they differ).
struct DistilBertShape {
  int64_t vocab_size = 30522;
  int64_t dim = 768;
  int64_t n_layers = 6;
  int64_t n_heads = 12;
  int64_t hidden_dim = 3072;
  double dropout = 0.1;
  double attention_dropout = 0.1;
  Activation activation = Activation::Gelu;
  double qa_dropout = 0.1;
  double seq_classif_dropout = 0.2;
  int64_t max_position_embeddings = 512;
  std::optional<int64_t> pad_token_id = 0;
  double initializer_range = 0.02;

  // Reads config.json's fields; sinusoidal_pos_embds true, an unknown activation and an n_heads that does
  // not divide dim throw berth::Error naming the field.
  static DistilBertShape from(const PretrainedConfig& config);
};

// HF's DistilBERT LayerNorms all use eps 1e-12, whatever the config says.
constexpr double kDistilBertLayerNormEps = 1e-12;

struct DistilBertEmbeddingsImpl : torch::nn::Module {
  explicit DistilBertEmbeddingsImpl(const DistilBertShape& shape);
  // input_ids: (B, T) int64 -> (B, T, dim)
  at::Tensor forward(const at::Tensor& input_ids);

  torch::nn::Embedding word_embeddings{nullptr};
  torch::nn::Embedding position_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(DistilBertEmbeddings);

struct DistilBertSelfAttentionImpl : torch::nn::Module {
  explicit DistilBertSelfAttentionImpl(const DistilBertShape& shape);
  // hidden: (B, T, dim), extended_mask: (B, 1, 1, T) -> (B, T, dim), through out_lin
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& extended_mask);

  int64_t n_heads = 0;
  torch::nn::Linear q_lin{nullptr};
  torch::nn::Linear k_lin{nullptr};
  torch::nn::Linear v_lin{nullptr};
  torch::nn::Linear out_lin{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(DistilBertSelfAttention);

struct DistilBertFFNImpl : torch::nn::Module {
  explicit DistilBertFFNImpl(const DistilBertShape& shape);
  // x: (B, T, dim) -> (B, T, dim): lin1, activation, lin2, dropout
  at::Tensor forward(const at::Tensor& x);

  Activation activation = Activation::Gelu;
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear lin1{nullptr};
  torch::nn::Linear lin2{nullptr};
};
TORCH_MODULE(DistilBertFFN);

// HF's TransformerBlock: sa_layer_norm(attention(x) + x), then output_layer_norm(ffn(h) + h).
struct DistilBertBlockImpl : torch::nn::Module {
  explicit DistilBertBlockImpl(const DistilBertShape& shape);
  // hidden: (B, T, dim), extended_mask: (B, 1, 1, T) -> (B, T, dim)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& extended_mask);

  DistilBertSelfAttention attention{nullptr};
  torch::nn::LayerNorm sa_layer_norm{nullptr};
  DistilBertFFN ffn{nullptr};
  torch::nn::LayerNorm output_layer_norm{nullptr};
};
TORCH_MODULE(DistilBertBlock);

// HF's Transformer: layer.N.
struct DistilBertTransformerImpl : torch::nn::Module {
  explicit DistilBertTransformerImpl(const DistilBertShape& shape);

  torch::nn::ModuleList layer{nullptr};  // of DistilBertBlock
};
TORCH_MODULE(DistilBertTransformer);

// HF's DistilBertModel: embeddings and transformer.
struct DistilBertModelImpl : torch::nn::Module {
  explicit DistilBertModelImpl(const DistilBertShape& shape);

  DistilBertEmbeddings embeddings{nullptr};
  DistilBertTransformer transformer{nullptr};
};
TORCH_MODULE(DistilBertModel);

// DistilBert<Head> for one task: distilbert.* plus pre_classifier/classifier; classifier; vocab_transform /
// vocab_layer_norm / vocab_projector (weight tied to the word embeddings, bias its own); qa_outputs.
class DistilBertTaskModel : public EncoderTaskModel {
 public:
  DistilBertTaskModel(const PretrainedConfig& config, ModelTask task, CheckpointLayout layout,
                      const TaskModelInit& init);

  DistilBertShape shape;
  DistilBertModel distilbert{nullptr};
  torch::nn::Linear pre_classifier{nullptr};
  torch::nn::Linear linear_head{nullptr};  // "classifier" or "qa_outputs"
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear vocab_transform{nullptr};
  torch::nn::LayerNorm vocab_layer_norm{nullptr};
  TiedDecoder vocab_projector{nullptr};

 protected:
  at::Tensor compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                            const at::Tensor& types) override;
};

}  // namespace berth
