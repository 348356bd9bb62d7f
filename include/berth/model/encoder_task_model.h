// EncoderTaskModel: the TaskModel half every bidirectional encoder family shares (RoBERTa, DistilBERT,
// ELECTRA): reading the batch, HF's loss for each task head, info, saving in HF's layout, layer hooks.
#pragma once

#include "berth/model/activation_checkpoint.h"
#include "berth/model/checkpoint_io.h"
#include "berth/model/model_task.h"
#include "berth/model/pretrained_config.h"
#include "berth/model/task_model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace berth {

// The parts of an encoder config every family reads under its own field names.
struct EncoderShape {
  int64_t vocab_size = 0;
  int64_t max_positions = 0;  // the longest input in tokens
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
};

// HF's losses of the encoder task heads.
// logits (B, T, classes) (token classes, or the vocabulary for masked LM), labels (B, T) int64 with -100 on
// tokens left out -> cross-entropy over the others.
at::Tensor token_loss(const at::Tensor& logits, const at::Tensor& labels);
// logits (B, T, 2) start/end, positions (B, 2) start/end int64 -> HF's mean of the start and end
// cross-entropies, positions clamped to [0, T] and T ignored (a span outside the input adds nothing).
at::Tensor question_answering_loss(const at::Tensor& logits, const at::Tensor& positions);

// Applies HF's _init_weights (normal(0, range) Linear/Embedding weights, zero biases and padding rows,
// LayerNorm 1/0) and zeroes the output biases of tied decoders (parameters of modules that are none of
// those).
void init_encoder_weights(torch::nn::Module& module, double initializer_range, std::optional<uint64_t> seed);

class EncoderTaskModel : public torch::nn::Module, public TaskModel {
 public:
  // `layout` is the family's for `task` (its architecture is what save_pretrained writes). Question answering
  // needs two labels (start, end); another count throws naming num_labels.
  EncoderTaskModel(PretrainedConfig config, ModelTask task, CheckpointLayout layout);

  // Runs HF's forward for the task: the batch's input_ids, attention_mask, token_type_ids (ignored by
  // families without token types) and labels ("start_positions"/"end_positions" for question answering).
  TaskOutput forward_batch(const Batch& batch) override;
  // labels: as forward_batch takes them; for question answering (B, 2) start/end positions.
  at::Tensor loss(const at::Tensor& logits, const at::Tensor& labels) override;
  torch::nn::Module& module() override { return *this; }
  TaskModelInfo info() const override;
  void save_pretrained(const std::string& dir) const override;
  std::vector<std::string> hook_blocks() const override { return blocks_; }
  void set_layer_hooks(std::shared_ptr<LayerHooks> hooks) override { hooks_ = std::move(hooks); }
  bool supports_gradient_checkpointing() const override { return true; }

  // input_ids, attention_mask, token_type_ids: (B, T) -> the task's logits (see TaskOutput), with checked
  // inputs (undefined mask: all ones; undefined types: zeros).
  at::Tensor logits(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                    const at::Tensor& token_type_ids);

  const PretrainedConfig& config() const { return config_; }
  ModelTask task() const { return task_; }

 protected:
  // The family's forward with checked inputs: input_ids (B, T), mask (B, T) 1/0, types (B, T) -> logits.
  virtual at::Tensor compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                                    const at::Tensor& types) = 0;
  // fn(input) run as block `block`: the hooks wrap it when set and `block` is one of hook_blocks().
  at::Tensor run_block(const std::string& block, const at::Tensor& input,
                       const std::function<at::Tensor(const at::Tensor&)>& fn);
  // Transformer layer number `index`, hook block `block`: as run_block, and checkpointed while training with
  // gradient checkpointing on for that layer (fn then outlives the call: it must capture by value,
  // activation_checkpoint.h).
  at::Tensor run_layer(size_t index, const std::string& block, torch::nn::Module& layer,
                       const at::Tensor& input, const BlockForward& fn);
  // fn(input) as a second use of the word embeddings' block: a masked-LM head's tied decoder, which reads the
  // word embeddings again (called inside the head block that holds the decoder's bias). input (B, T, C) ->
  // fn's (B, T, vocab); in a loss-only forward with labels, fn runs on the labeled tokens' rows only:
  // (N, C) -> (N, vocab).
  at::Tensor run_tied_decoder(const at::Tensor& input,
                              const std::function<at::Tensor(const at::Tensor&)>& fn);
  // The hook blocks in forward order: `embeddings` (the base model's embedding blocks, the first holding the
  // word embeddings), `layers`, then `head` (the head's top-level modules); a masked-LM model's tied decoder
  // uses the first embeddings block again, last (run_tied_decoder).
  void set_blocks(const std::vector<std::string>& embeddings, const std::vector<std::string>& layers,
                  const std::vector<std::string>& head);
  void set_shape(const EncoderShape& shape) { shape_ = shape; }

 private:
  // forward_batch for a masked LM in a loss-only forward with labels: the decoder sees the labeled rows only.
  TaskOutput forward_labeled_tokens(const at::Tensor& input_ids, const Batch& batch);

  PretrainedConfig config_;
  ModelTask task_;
  CheckpointLayout layout_;
  EncoderShape shape_;
  std::vector<std::string> blocks_;
  std::string word_embeddings_block_;
  at::Tensor decoded_rows_;  // (N,) int64: the tokens a loss-only masked-LM forward decodes; undefined: all
  std::shared_ptr<LayerHooks> hooks_;
};

}  // namespace berth
