// Llama and the families built like it (Mistral, Qwen2): HF's modules under their checkpoint names, with the
// *ForCausalLM and *ForSequenceClassification heads as one TaskModel.
#pragma once

#include "berth/model/activation_checkpoint.h"
#include "berth/model/checkpoint_io.h"
#include "berth/model/decoder_layers.h"
#include "berth/model/decoder_task_model.h"
#include "berth/model/pretrained_config.h"
#include "berth/model/rotary_embedding.h"
#include "berth/model/task_model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace berth {

// The config fields of LlamaConfig, MistralConfig and Qwen2Config berth reads, resolved per family: Llama's
// biases follow attention_bias / mlp_bias, Qwen2 always has q/k/v biases (no o_proj or MLP bias), Mistral
// none and a sliding window.
struct LlamaSettings {
  std::string model_type;    // "llama", "mistral" or "qwen2"
  std::string class_prefix;  // "Llama", "Mistral", "Qwen2": HF's class names
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;
  int64_t head_dim = 128;
  int64_t max_position_embeddings = 2048;
  DecoderActivation activation = DecoderActivation::Silu;
  double rms_norm_eps = 1e-6;
  double initializer_range = 0.02;
  double attention_dropout = 0.0;
  bool qkv_bias = false;
  bool o_bias = false;
  bool mlp_bias = false;
  bool tie_word_embeddings = false;
  std::optional<int64_t> sliding_window;  // Mistral's banded causal mask
  std::optional<int64_t> pad_token_id;
  RopeParameters rope;

  // Reads config.json of model_type llama, mistral or qwen2; what berth does not implement throws naming it.
  static LlamaSettings read(const PretrainedConfig& config);
};

struct LlamaAttentionImpl : torch::nn::Module {
  explicit LlamaAttentionImpl(const LlamaSettings& settings);
  // hidden: (B, T, C), mask: (B, 1, T, T) additive, rotary: cos/sin (1, T, D) -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, const RotaryCosSin& rotary);

  int64_t num_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  double dropout = 0.0;
  torch::nn::Linear q_proj{nullptr};
  torch::nn::Linear k_proj{nullptr};
  torch::nn::Linear v_proj{nullptr};
  torch::nn::Linear o_proj{nullptr};
};
TORCH_MODULE(LlamaAttention);

// SwiGLU: down_proj(act(gate_proj(x)) * up_proj(x)).
struct LlamaMLPImpl : torch::nn::Module {
  explicit LlamaMLPImpl(const LlamaSettings& settings);
  // x: (B, T, C) -> (B, T, C)
  at::Tensor forward(const at::Tensor& x);

  DecoderActivation activation = DecoderActivation::Silu;
  torch::nn::Linear gate_proj{nullptr};
  torch::nn::Linear up_proj{nullptr};
  torch::nn::Linear down_proj{nullptr};
};
TORCH_MODULE(LlamaMLP);

struct LlamaDecoderLayerImpl : torch::nn::Module {
  explicit LlamaDecoderLayerImpl(const LlamaSettings& settings);
  // hidden: (B, T, C), mask: (B, 1, T, T), rotary: (1, T, D) -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask, const RotaryCosSin& rotary);

  LlamaAttention self_attn{nullptr};
  LlamaMLP mlp{nullptr};
  RMSNorm input_layernorm{nullptr};
  RMSNorm post_attention_layernorm{nullptr};
};
TORCH_MODULE(LlamaDecoderLayer);

// HF's LlamaModel: embed_tokens, layers.N, norm, and the rotary embedding (no parameters). token_type_ids are
// not taken (HF's Llama has none; berth's collator adds zeros that decoders ignore).
struct LlamaModelImpl : torch::nn::Module {
  explicit LlamaModelImpl(const LlamaSettings& settings);
  // input_ids: (B, T), attention_mask: (B, T) 1/0 or undefined -> last hidden state (B, T, C)
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                     LayerHooks* hooks = nullptr);

  LlamaSettings settings;
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};
  RotaryEmbedding rotary;
  GradientCheckpointing
      gradient_checkpointing;  // layers checkpointed while training (activation_checkpoint.h)
};
TORCH_MODULE(LlamaModel);

// <Prefix>ForCausalLM (lm_head, tied to model.embed_tokens when tie_word_embeddings) or
// <Prefix>ForSequenceClassification (score, no bias, on each row's last non-pad token). Hook blocks:
// "model.embed_tokens", "model.layers.<i>", "model.norm", then "lm_head" or "score"; a tied head is a second
// use of "model.embed_tokens", last.
struct LlamaTaskModelImpl : DecoderTaskModel {
  LlamaTaskModelImpl(const PretrainedConfig& config, ModelTask task, const TaskModelInit& init = {});
  void set_gradient_checkpointing(const GradientCheckpointing& how) override;

  LlamaSettings settings;
  LlamaModel model{nullptr};

 protected:
  at::Tensor hidden_states(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                           LayerHooks* hooks) override;
  const at::Tensor& word_embeddings() const override { return model->embed_tokens->weight; }
};
TORCH_MODULE(LlamaTaskModel);

// HF's class name for the family and task: "LlamaForCausalLM", "Qwen2ForSequenceClassification", ...
std::string llama_architecture(const LlamaSettings& settings, ModelTask task);

// The family's checkpoint names for `task`: prefix "model.", the tied lm_head.weight ignored, HF's init.
CheckpointLayout llama_checkpoint_layout(const PretrainedConfig& config, ModelTask task);

}  // namespace berth
