// DecoderTaskModel: the TaskModel half every decoder family shares (GPT-2, Llama, Mistral, Qwen2): the
// causal-LM head (its own or tied to the word embeddings), the last-token classifier, HF's losses, info,
// saving in HF's layout and the hook blocks.
#pragma once

#include "berth/model/checkpoint_io.h"
#include "berth/model/model_task.h"
#include "berth/model/pretrained_config.h"
#include "berth/model/task_model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace berth {

// The parts of a decoder config every family reads under its own field names.
struct DecoderShape {
  int64_t vocab_size = 0;
  int64_t max_positions = 0;  // the longest input in tokens, for reports
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  std::optional<int64_t> pad_token_id;  // finds each row's last token for the classifier
  bool tie_word_embeddings = true;      // the causal-LM head multiplies by the word embeddings
};

// The family's hook blocks in forward order: `embeddings` (the first holds the word embeddings), `layers`,
// then `final_norm`; the head's block follows, and a tied head uses the word embeddings' block again, last.
struct DecoderBlocks {
  std::vector<std::string> embeddings;
  std::vector<std::string> layers;
  std::string final_norm;
};

class DecoderTaskModel : public torch::nn::Module, public TaskModel {
 public:
  // <Family>ForCausalLM or <Family>ForSequenceClassification (`layout` is the family's for `task`); other
  // tasks are the caller's bug (the family's task list refuses them first).
  DecoderTaskModel(PretrainedConfig config, ModelTask task, CheckpointLayout layout);

  // input_ids, attention_mask: (B, T); labels: (B, T) token ids for CausalLM (shifted inside), per-row labels
  // for sequence classification -> logits (B, T, vocab) or (B, num_labels), and the loss when labels are
  // given.
  TaskOutput forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                     const at::Tensor& labels = {});

  TaskOutput forward_batch(const Batch& batch) override;
  at::Tensor loss(const at::Tensor& logits, const at::Tensor& labels) override;
  torch::nn::Module& module() override { return *this; }
  TaskModelInfo info() const override;
  void save_pretrained(const std::string& dir) const override;
  std::vector<std::string> hook_blocks() const override { return blocks_; }
  void set_layer_hooks(std::shared_ptr<LayerHooks> hooks) override { hooks_ = std::move(hooks); }
  bool supports_gradient_checkpointing() const override { return true; }

  const PretrainedConfig& config() const { return config_; }
  ModelTask task() const { return task_; }

  torch::nn::Linear lm_head{nullptr};  // CausalLM without tied embeddings
  torch::nn::Linear score{nullptr};    // SequenceClassification

 protected:
  // The family's base model: input_ids (B, T), attention_mask (B, T) or undefined -> the last hidden state
  // (B, T, C), its blocks run through `hooks` (nullptr: none).
  virtual at::Tensor hidden_states(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                   LayerHooks* hooks) = 0;
  // The word embeddings (V, C), the tied head's weight.
  virtual const at::Tensor& word_embeddings() const = 0;
  // Registers the task's head ("score", or "lm_head" unless tied) and the hook blocks; called by the family
  // once its base model is registered, so the parameters keep HF's order.
  void add_head(const DecoderShape& shape, const DecoderBlocks& blocks);

 private:
  // hidden (B, T, C) -> the head's logits: (B, T, vocab), or (B, num_labels) at each row's last non-pad
  // token.
  at::Tensor head_logits(const at::Tensor& hidden, const at::Tensor& input_ids);

  PretrainedConfig config_;
  ModelTask task_;
  CheckpointLayout layout_;
  DecoderShape shape_;
  std::vector<std::string> blocks_;
  std::string word_embeddings_block_;
  std::shared_ptr<LayerHooks> hooks_;
};

}  // namespace berth
