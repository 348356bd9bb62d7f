// ModernBERT: HF's ModernBertModel (pre-norm layers with rotary attention, global layers alternating with
// sliding-window local ones, a GeGLU MLP, LayerNorms without bias by default) and its sequence/token
// classification, masked-LM and question-answering heads, under HF's parameter names.
#pragma once

#include "berth/model/auto_model.h"
#include "berth/model/bert_model.h"
#include "berth/model/encoder_task_model.h"
#include "berth/model/rotary_embedding.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace berth {

// ModernBertConfig's fields (HF's names and defaults).
struct ModernBertShape {
  int64_t vocab_size = 50368;
  int64_t hidden_size = 768;
  int64_t intermediate_size = 1152;
  int64_t num_hidden_layers = 22;
  int64_t num_attention_heads = 12;
  Activation hidden_activation = Activation::Gelu;
  int64_t max_position_embeddings = 8192;
  double initializer_range = 0.02;
  double initializer_cutoff_factor = 2.0;  // null in config.json: HF's 3
  double norm_eps = 1e-5;
  bool norm_bias = false;
  std::optional<int64_t> pad_token_id = 50283;
  bool attention_bias = false;
  double attention_dropout = 0.0;
  std::vector<bool> sliding;            // per layer: layer_types[i] == "sliding_attention"
  double global_rope_theta = 160000.0;  // rope_parameters.full_attention.rope_theta
  double local_rope_theta = 10000.0;    // rope_parameters.sliding_attention.rope_theta
  int64_t local_attention = 128;  // the whole window: a local query sees keys within local_attention / 2
  double embedding_dropout = 0.0;
  bool mlp_bias = false;
  double mlp_dropout = 0.0;
  bool decoder_bias = true;
  bool mean_pooling = false;  // classifier_pooling "mean" (else "cls")
  double classifier_dropout = 0.0;
  bool classifier_bias = false;
  Activation classifier_activation = Activation::Gelu;

  // Reads config.json's fields (layer_types, or the older global_attn_every_n_layers; rope_parameters per
  // layer type, or global_rope_theta / local_rope_theta). Values berth does not implement (a rope type other
  // than default, an unknown activation or layer type, classifier_pooling other than cls/mean) throw
  // berth::Error naming the field.
  static ModernBertShape from(const PretrainedConfig& config);
  int64_t head_dim() const { return hidden_size / num_attention_heads; }
};

// HF's _init_weights for ModernBERT over `module`'s parameters by name: truncated normals (cut at
// initializer_cutoff_factor standard deviations) of initializer_range for the embeddings, Wqkv and Wi, of
// initializer_range / sqrt(2 * layers) for both Wo and head.dense, of hidden_size^-0.5 for the classifier;
// norms 1, biases 0. The padding row is drawn too, as HF leaves it. Drawn on the CPU (a seed gives the same
// weights on every device).
void init_modernbert_weights(torch::nn::Module& module, const ModernBertShape& shape,
                             std::optional<uint64_t> seed);

// nn.LayerNorm(hidden, eps, bias=norm_bias): a bias only when the config asks for one.
struct ModernBertNormImpl : torch::nn::Module {
  ModernBertNormImpl(int64_t size, double eps, bool bias);
  // x: (..., C) -> (..., C)
  at::Tensor forward(const at::Tensor& x);

  double eps = 1e-5;
  at::Tensor weight;
  at::Tensor bias;  // undefined without norm_bias
};
TORCH_MODULE(ModernBertNorm);

struct ModernBertEmbeddingsImpl : torch::nn::Module {
  explicit ModernBertEmbeddingsImpl(const ModernBertShape& shape);
  // input_ids: (B, T) int64 -> (B, T, C): tok_embeddings, norm, drop (no position table: rotary positions)
  at::Tensor forward(const at::Tensor& input_ids);

  torch::nn::Embedding tok_embeddings{nullptr};
  ModernBertNorm norm{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(ModernBertEmbeddings);

struct ModernBertAttentionImpl : torch::nn::Module {
  explicit ModernBertAttentionImpl(const ModernBertShape& shape);
  // hidden: (B, T, C), mask: additive (B, 1, 1 or T, T), rotary: cos/sin (1, T, D) -> (B, T, C) through Wo
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, const RotaryCosSin& rotary);

  int64_t num_heads = 0;
  double dropout_p = 0.0;  // on the attention probabilities (and after Wo, as out_drop)
  torch::nn::Linear Wqkv{nullptr};
  torch::nn::Linear Wo{nullptr};
};
TORCH_MODULE(ModernBertAttention);

// GeGLU: Wi gives input and gate halves; Wo(drop(act(input) * gate)).
struct ModernBertMLPImpl : torch::nn::Module {
  explicit ModernBertMLPImpl(const ModernBertShape& shape);
  // x: (B, T, C) -> (B, T, C)
  at::Tensor forward(const at::Tensor& x);

  Activation activation = Activation::Gelu;
  torch::nn::Linear Wi{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::Linear Wo{nullptr};
};
TORCH_MODULE(ModernBertMLP);

// Pre-norm: h + attn(attn_norm(h)), then + mlp(mlp_norm(.)). Layer 0 has no attn_norm (HF's Identity: the
// embeddings end in a norm).
struct ModernBertEncoderLayerImpl : torch::nn::Module {
  ModernBertEncoderLayerImpl(const ModernBertShape& shape, int64_t index);
  // hidden: (B, T, C), mask (B, 1, 1 or T, T), rotary (1, T, D) -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, const RotaryCosSin& rotary);

  ModernBertNorm attn_norm{nullptr};  // null on layer 0
  ModernBertAttention attn{nullptr};
  ModernBertNorm mlp_norm{nullptr};
  ModernBertMLP mlp{nullptr};
};
TORCH_MODULE(ModernBertEncoderLayer);

// HF's ModernBertModel: embeddings, layers, final_norm (its rotary tables hold no parameters).
struct ModernBertModelImpl : torch::nn::Module {
  explicit ModernBertModelImpl(const ModernBertShape& shape);

  ModernBertEmbeddings embeddings{nullptr};
  torch::nn::ModuleList layers{nullptr};  // of ModernBertEncoderLayer
  ModernBertNorm final_norm{nullptr};
};
TORCH_MODULE(ModernBertModel);

// HF's ModernBertPredictionHead: norm(act(dense(x))), dense with classifier_bias.
struct ModernBertPredictionHeadImpl : torch::nn::Module {
  explicit ModernBertPredictionHeadImpl(const ModernBertShape& shape);
  // x: (..., C) -> (..., C)
  at::Tensor forward(const at::Tensor& x);

  Activation activation = Activation::Gelu;
  torch::nn::Linear dense{nullptr};
  ModernBertNorm norm{nullptr};
};
TORCH_MODULE(ModernBertPredictionHead);

// The masked-LM decoder: its weight is tok_embeddings (tied, not a tensor here), its bias its own when
// decoder_bias.
struct ModernBertDecoderImpl : torch::nn::Module {
  ModernBertDecoderImpl(int64_t vocab_size, bool bias);
  // x: (B, T, C), word_embeddings: (V, C) -> (B, T, V)
  at::Tensor forward(const at::Tensor& x, const at::Tensor& word_embeddings);

  at::Tensor bias;  // undefined without decoder_bias
};
TORCH_MODULE(ModernBertDecoder);

// ModernBert<Head> for one task: model.* plus head (the prediction head), then classifier (sequence and
// token classification, question answering) or decoder (masked LM).
class ModernBertTaskModel : public EncoderTaskModel {
 public:
  ModernBertTaskModel(const PretrainedConfig& config, ModelTask task, CheckpointLayout layout,
                      const TaskModelInit& init);

  ModernBertShape shape;
  ModernBertModel model{nullptr};
  ModernBertPredictionHead head{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::Linear classifier{nullptr};
  ModernBertDecoder decoder{nullptr};

 protected:
  at::Tensor compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                            const at::Tensor& types) override;

 private:
  // hidden (B, T, C) after embeddings -> (B, T, C) after final_norm, each layer a hook block.
  at::Tensor run_layers(const at::Tensor& hidden, const at::Tensor& mask);
  // hidden (B, T, C) after final_norm -> the task's logits.
  at::Tensor run_head(const at::Tensor& hidden, const at::Tensor& mask);

  RotaryEmbedding global_rotary_;
  RotaryEmbedding local_rotary_;
};

}  // namespace berth
