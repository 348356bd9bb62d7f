// GPT-2: HF's GPT2Model modules under their checkpoint names, with the GPT2LMHeadModel and
// GPT2ForSequenceClassification heads as one TaskModel.
#pragma once

#include "berth/model/activation_checkpoint.h"
#include "berth/model/checkpoint_io.h"
#include "berth/model/decoder_layers.h"
#include "berth/model/decoder_task_model.h"
#include "berth/model/pretrained_config.h"
#include "berth/model/task_model.h"

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

// GPT2Config's fields berth reads, with transformers' defaults.
struct GPT2Settings {
  int64_t vocab_size = 50257;
  int64_t n_positions = 1024;
  int64_t n_embd = 768;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_inner = 0;  // 4 * n_embd when config.json has null
  DecoderActivation activation = DecoderActivation::GeluNew;
  double layer_norm_epsilon = 1e-5;
  double initializer_range = 0.02;
  double embd_pdrop = 0.1;
  double attn_pdrop = 0.1;
  double resid_pdrop = 0.1;
  bool scale_attn_weights = true;
  bool scale_attn_by_inverse_layer_idx = false;
  bool reorder_and_upcast_attn = false;
  bool tie_word_embeddings = true;
  std::optional<int64_t> pad_token_id;

  // Reads and validates config.json's fields; add_cross_attention and bad values throw naming the field.
  static GPT2Settings read(const PretrainedConfig& config);
};

struct GPT2AttentionImpl : torch::nn::Module {
  GPT2AttentionImpl(const GPT2Settings& settings, int64_t layer_idx);
  // hidden: (B, T, C), mask: (B, 1, T, T) additive -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask);

  int64_t num_heads = 0;
  int64_t head_dim = 0;
  double scaling = 1.0;  // 1/sqrt(head_dim) and/or 1/(layer_idx + 1), as the config asks
  bool reorder_and_upcast = false;
  Conv1D c_attn{nullptr};
  Conv1D c_proj{nullptr};
  torch::nn::Dropout attn_dropout{nullptr};
  torch::nn::Dropout resid_dropout{nullptr};
};
TORCH_MODULE(GPT2Attention);

struct GPT2MLPImpl : torch::nn::Module {
  explicit GPT2MLPImpl(const GPT2Settings& settings);
  // hidden: (B, T, C) -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden);

  DecoderActivation activation = DecoderActivation::GeluNew;
  Conv1D c_fc{nullptr};
  Conv1D c_proj{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(GPT2MLP);

struct GPT2BlockImpl : torch::nn::Module {
  GPT2BlockImpl(const GPT2Settings& settings, int64_t layer_idx);
  // hidden: (B, T, C), mask: (B, 1, T, T) -> (B, T, C)
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& mask);

  torch::nn::LayerNorm ln_1{nullptr};
  GPT2Attention attn{nullptr};
  torch::nn::LayerNorm ln_2{nullptr};
  GPT2MLP mlp{nullptr};
};
TORCH_MODULE(GPT2Block);

// HF's GPT2Model: wte, wpe, h.N, ln_f. token_type_ids are not taken: berth's collator always adds zeros,
// which HF's GPT-2 would embed through wte; HF's GPT-2 tokenizer gives none, and so berth computes that case.
struct GPT2ModelImpl : torch::nn::Module {
  explicit GPT2ModelImpl(const GPT2Settings& settings);
  // input_ids: (B, T), attention_mask: (B, T) 1/0 or undefined -> last hidden state (B, T, C)
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                     LayerHooks* hooks = nullptr);

  GPT2Settings settings;
  torch::nn::Embedding wte{nullptr};
  torch::nn::Embedding wpe{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  GradientCheckpointing
      gradient_checkpointing;  // blocks checkpointed while training (activation_checkpoint.h)
};
TORCH_MODULE(GPT2Model);

// GPT2LMHeadModel (task CausalLM: lm_head, tied to transformer.wte unless tie_word_embeddings is false) or
// GPT2ForSequenceClassification (score, no bias, on each row's last non-pad token). Hook blocks:
// "transformer.wte", "transformer.wpe", "transformer.h.<i>", "transformer.ln_f", then "lm_head" or "score";
// a tied head is a second use of "transformer.wte", last.
struct GPT2TaskModelImpl : DecoderTaskModel {
  GPT2TaskModelImpl(const PretrainedConfig& config, ModelTask task, const TaskModelInit& init = {});
  void set_gradient_checkpointing(const GradientCheckpointing& how) override;

  GPT2Settings settings;
  GPT2Model transformer{nullptr};

 protected:
  at::Tensor hidden_states(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                           LayerHooks* hooks) override;
  const at::Tensor& word_embeddings() const override { return transformer->wte->weight; }
};
TORCH_MODULE(GPT2TaskModel);

// HF's _init_weights for GPT-2: init_decoder_weights, then each attn.c_proj and mlp.c_proj redrawn with
// std initializer_range / sqrt(2 * n_layer) (the GPT-2 paper's residual scaling).
void init_gpt2_weights(torch::nn::Module& module, const GPT2Settings& settings, std::optional<uint64_t> seed);

// GPT-2's checkpoint names for `task`: GPT2LMHeadModel / GPT2ForSequenceClassification, prefix
// "transformer.", the tied lm_head.weight and the attention-mask buffers older checkpoints hold ignored.
CheckpointLayout gpt2_checkpoint_layout(const PretrainedConfig& config, ModelTask task);

}  // namespace berth
