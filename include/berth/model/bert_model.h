// BertModel and its blocks: HF transformers' modules, parameter names and computation.
#pragma once

#include "berth/model/activation_checkpoint.h"
#include "berth/model/bert_config.h"
#include "berth/model/layer_hooks.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace berth {

// How a freshly built model gets its weights.
struct BertInitOptions {
  // HF's _init_weights: Linear and Embedding weights ~ normal(0, initializer_range), biases 0, the padding
  // row 0, LayerNorm 1/0. false leaves libtorch's defaults, for callers that overwrite every tensor next.
  bool random = true;
  // The seed of a private generator; nullopt draws from torch's global one (torch::manual_seed governs it).
  std::optional<uint64_t> seed;
};

// Applies HF's _init_weights to every Linear, Embedding and LayerNorm in `module` (see BertInitOptions).
// Values are drawn on the CPU in a fixed module order and copied in, so a seed gives the same weights on
// every device.
void init_bert_weights(torch::nn::Module& module, double initializer_range, std::optional<uint64_t> seed);

// HF's additive attention mask: mask (B, T) of 1 (attend) / 0 (padding), any dtype -> (B, 1, 1, T) of
// `dtype`, 0 where attended and finfo(dtype).min where masked.
at::Tensor extended_attention_mask(const at::Tensor& attention_mask, c10::ScalarType dtype);

struct BertEmbeddingsImpl : torch::nn::Module {
  explicit BertEmbeddingsImpl(const BertConfig& config);
  // input_ids, token_type_ids: (B, T) int64 -> (B, T, C)
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids);

  torch::nn::Embedding word_embeddings{nullptr};
  torch::nn::Embedding position_embeddings{nullptr};
  torch::nn::Embedding token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};  // HF's (TensorFlow's) spelling, part of the checkpoint names
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(BertEmbeddings);

struct BertSelfAttentionImpl : torch::nn::Module {
  explicit BertSelfAttentionImpl(const BertConfig& config);
  // hidden: (B, T, C), extended_mask: (B, 1, 1, T) -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& extended_mask);

  int64_t num_heads = 0;
  int64_t head_size = 0;
  torch::nn::Linear query{nullptr};
  torch::nn::Linear key{nullptr};
  torch::nn::Linear value{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(BertSelfAttention);

// dense -> dropout -> LayerNorm(x + residual): the block after attention and after the feed-forward layer.
struct BertResidualOutputImpl : torch::nn::Module {
  BertResidualOutputImpl(int64_t in_features, const BertConfig& config);
  // hidden: (B, T, in_features), residual: (B, T, C) -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& residual);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(BertResidualOutput);

struct BertAttentionImpl : torch::nn::Module {
  explicit BertAttentionImpl(const BertConfig& config);
  // hidden: (B, T, C), extended_mask: (B, 1, 1, T) -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& extended_mask);

  BertSelfAttention self{nullptr};
  BertResidualOutput output{nullptr};
};
TORCH_MODULE(BertAttention);

enum class Activation { Gelu, GeluNew, GeluPytorchTanh, Relu };
// "gelu", "gelu_new", "gelu_pytorch_tanh", "relu"; anything else throws berth::Error.
Activation parse_activation(const std::string& name);
at::Tensor apply_activation(Activation activation, const at::Tensor& x);

struct BertIntermediateImpl : torch::nn::Module {
  explicit BertIntermediateImpl(const BertConfig& config);
  // hidden: (B, T, C) -> (B, T, intermediate_size)
  at::Tensor forward(const at::Tensor& hidden);

  Activation activation = Activation::Gelu;
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(BertIntermediate);

struct BertLayerImpl : torch::nn::Module {
  explicit BertLayerImpl(const BertConfig& config);
  // hidden: (B, T, C), extended_mask: (B, 1, 1, T) -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& extended_mask);

  BertAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertResidualOutput output{nullptr};
};
TORCH_MODULE(BertLayer);

struct BertEncoderImpl : torch::nn::Module {
  explicit BertEncoderImpl(const BertConfig& config);
  // hidden: (B, T, C), extended_mask: (B, 1, 1, T) -> (B, T, C)
  at::Tensor forward(at::Tensor hidden, const at::Tensor& extended_mask);

  torch::nn::ModuleList layer{nullptr};  // of BertLayer: names encoder.layer.N.*
};
TORCH_MODULE(BertEncoder);

struct BertPoolerImpl : torch::nn::Module {
  explicit BertPoolerImpl(const BertConfig& config);
  // hidden: (B, T, C) -> (B, C): tanh(dense(hidden[:, 0])), the [CLS] position
  at::Tensor forward(const at::Tensor& hidden);

  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(BertPooler);

struct BertModelOutput {
  at::Tensor last_hidden_state;  // (B, T, C)
  at::Tensor pooler_output;      // (B, C)
};

// HF's BertModel. Its position_ids and token_type_ids are not buffers here: in transformers they are
// non-persistent (absent from state_dict and model.safetensors), so berth computes them per call.
struct BertModelImpl : torch::nn::Module {
  // add_pooling_layer false (HF's BertForMaskedLM): no pooler, and pooler_output is undefined.
  explicit BertModelImpl(const BertConfig& config, const BertInitOptions& init = {},
                         bool add_pooling_layer = true);
  // input_ids: (B, T) int64; attention_mask: (B, T) 1/0, undefined = all ones; token_type_ids: (B, T) int64,
  // undefined = all zeros. Inputs must be on the model's device (a PlacementError says otherwise).
  BertModelOutput forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                          const at::Tensor& token_type_ids = {});

  // Code run around each block (embeddings, each encoder layer, pooler; see model/layer_hooks.h), named
  // `prefix` + the block's path ("bert." inside BertForSequenceClassification). nullptr (the default)
  // removes them; without hooks forward is unchanged.
  void set_layer_hooks(std::shared_ptr<LayerHooks> hooks, const std::string& prefix = "");
  // The blocks set_layer_hooks wraps, in forward order: prefix + "embeddings", "encoder.layer.<i>", "pooler"
  // (when there is one).
  std::vector<std::string> hook_blocks(const std::string& prefix = "") const;

  BertConfig config;
  BertEmbeddings embeddings{nullptr};
  BertEncoder encoder{nullptr};
  BertPooler pooler{nullptr};
  GradientCheckpointing
      gradient_checkpointing;  // layers checkpointed while training (activation_checkpoint.h)

 private:
  std::shared_ptr<LayerHooks> hooks_;
  std::vector<std::string> hook_blocks_;  // embeddings, encoder.layer.0 .. N-1, pooler (with the prefix)
};
TORCH_MODULE(BertModel);

}  // namespace berth
