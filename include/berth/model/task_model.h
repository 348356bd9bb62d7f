// TaskModel: what the Trainer, evaluation, prediction and ZeRO-3 need of a model with a task head, so none of
// them names a model family.
#pragma once

#include "berth/model/activation_checkpoint.h"
#include "berth/model/layer_hooks.h"
#include "berth/model/model_task.h"
#include "berth/model/problem_type.h"
#include "berth/placement/batch_check.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace berth {

struct TaskOutput {
  // The head's output: (B, num_labels) for sequence classification, (B, T, num_labels) for token
  // classification, (B, T, vocab) for the language models, (B, T, 2) start/end logits for question answering.
  at::Tensor logits;
  at::Tensor loss;  // scalar; undefined when the batch has no "labels"
};

// How a freshly built task model gets its weights.
struct TaskModelInit {
  // HF's _init_weights for the family (seeded below); false leaves libtorch's defaults, for a load that
  // overwrites every tensor next.
  bool random = true;
  std::optional<uint64_t> seed;  // nullopt: torch's global generator (torch::manual_seed governs it)
};

// What a task model is, for evaluation, prediction and reports.
struct TaskModelInfo {
  std::string architecture;  // HF's class name, as config.json's "architectures" lists it
  // kSingleLabelClassification, kMultiLabelClassification or kRegression: the config's problem_type, or, when
  // that is unset, what HF's pipelines assume (regression for one label, else single-label).
  std::string problem_type;
  std::vector<std::string> labels;  // the head's outputs by id (config.json's id2label)
  int64_t max_positions = 0;        // the longest input in tokens the model takes
  std::string summary;              // its size for reports: "2 layers, hidden 32, vocab 100"
  ModelTask task = ModelTask::SequenceClassification;
};

// A model with a task head. Its parameters carry HF's names, so checkpoints, optimizer state and ZeRO
// partitions are keyed the same for every family; the LayeredModel half gives ZeRO-3 its blocks.
class TaskModel : public LayeredModel {
 public:
  // The module holding every parameter (placement, optimizers, train()/eval() go through it).
  virtual torch::nn::Module& module() = 0;
  // batch: "input_ids" (B, T) int64 and the model's optional inputs ("attention_mask", "token_type_ids",
  // "labels"; "start_positions"/"end_positions" for question answering), on the module's device -> logits
  // and, when the batch has labels, HF's loss (the language models shift causal labels themselves, as HF).
  // Not named forward: a TORCH_MODULE holder deduces its operator()'s type from a single forward.
  virtual TaskOutput forward_batch(const Batch& batch) = 0;
  // HF's loss for `logits` as forward returns them and `labels` as the batch holds them (any device, as
  // long as both are on the same one).
  virtual at::Tensor loss(const at::Tensor& logits, const at::Tensor& labels) = 0;
  virtual TaskModelInfo info() const = 0;
  // config.json and model.safetensors in HF's layout, each written to a temporary name and renamed.
  virtual void save_pretrained(const std::string& dir) const = 0;
  // HF's activation_checkpointing_enable()/disable(): while training with autograd recording, each chosen
  // transformer layer (encoder or decoder layer) keeps only its input and runs again in backward
  // (activation_checkpoint.h). Embeddings and heads run as usual, as in HF. Families whose layers run inside
  // a base model pass it on.
  virtual void set_gradient_checkpointing(const GradientCheckpointing& how) { gradient_checkpointing_ = how; }
  const GradientCheckpointing& gradient_checkpointing() const { return gradient_checkpointing_; }
  // Whether set_gradient_checkpointing takes effect: berth's families checkpoint their layers; another
  // TaskModel (a user's) does not, and the Trainer refuses gradient_checkpointing for it (HF raises too).
  virtual bool supports_gradient_checkpointing() const { return false; }
  // Whether forward_batch may leave out what its loss does not read (LossOnlyForward sets it). A model that
  // ignores it computes everything, which is always correct.
  bool loss_only() const { return loss_only_; }
  void set_loss_only(bool on) { loss_only_ = on; }

 private:
  GradientCheckpointing gradient_checkpointing_;
  bool loss_only_ = false;
};

// While alive, `model`'s forward_batch may compute only what its loss needs, for callers that read the loss
// and not the logits (the Trainer's training steps and a language model's evaluation): a masked LM then runs
// its decoder on the labeled tokens only (ModernBERT's sparse_prediction, for every encoder family), so its
// logits are (N, vocab) for the N tokens whose label is not -100, in the batch's row-major order, and the
// loss is HF's. The model's previous setting comes back when the guard ends.
class LossOnlyForward {
 public:
  explicit LossOnlyForward(TaskModel& model, bool on = true) : model_(model), before_(model.loss_only()) {
    model_.set_loss_only(on);
  }
  ~LossOnlyForward() { model_.set_loss_only(before_); }
  LossOnlyForward(const LossOnlyForward&) = delete;
  LossOnlyForward& operator=(const LossOnlyForward&) = delete;

 private:
  TaskModel& model_;
  bool before_;
};

// The batch's tensor `name`, or an undefined tensor when the batch has none (a model's optional inputs).
at::Tensor batch_input(const Batch& batch, const std::string& name);
// The batch's input_ids; a batch without them throws berth::Error naming `model`, what the batch holds and
// the fix.
const at::Tensor& batch_input_ids(const Batch& batch, const std::string& model);

// A task model's size for TaskModelInfo::summary: "2 layers, hidden 32, vocab 100".
std::string model_summary(int64_t layers, int64_t hidden_size, int64_t vocab_size);

// HF's num_parameters(exclude_embeddings=True): every parameter outside torch::nn::Embedding modules (the
// 6 × tokens × parameters FLOP count uses it).
int64_t non_embedding_parameters(TaskModel& model);
// The most parameters ZeRO-3 gathers at once: the largest hook block, or a block used again (a tied
// decoder) together with the block used just before it, in which that use may nest.
int64_t largest_block_parameters(TaskModel& model);

}  // namespace berth
