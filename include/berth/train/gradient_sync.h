// GradientSync: how gradients meet across processes and how the optimizer steps on them, hidden from the
// Trainer (flashlight's Reducer idea, DeepSpeed's engine).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "berth/dist/communicator.h"
#include "berth/optim/adamw.h"
#include "berth/optim/param_groups.h"

namespace torch::nn {
class Module;
}

namespace berth::train {

// What the Trainer asks the optimizer for: HF's parameter groups and AdamW's hyperparameters.
struct OptimizerSpec {
  std::vector<optim::NamedParamGroup> groups;
  optim::AdamWOptions adam;
};

// One optimizer step's inputs.
struct StepOptions {
  double max_grad_norm = 0;  // <= 0: no clipping
  // The factor the loss was multiplied by before backward (fp16's loss scaling); gradients are divided by
  // it before clipping and stepping. 1: no scaling.
  double loss_scale = 1;
  // true (loss scaling on): a non-finite gradient norm skips the step (gradients dropped, parameters and
  // optimizer state untouched) and is reported as overflow. false: the step runs whatever the norm (HF).
  bool skip_on_overflow = false;
};

struct StepResult {
  double grad_norm =
      0;  // the global norm of the unscaled gradients before clipping (over every rank's shard)
  bool overflow = false;  // the norm was inf/nan and the step was skipped (only with skip_on_overflow)
};

// Bytes this rank holds for training state, by kind (the ZeRO paper's accounting), for the memory report.
struct MemoryFootprint {
  int64_t parameters = 0;        // the model's parameters as this rank holds them between steps
  int64_t gradients = 0;         // gradient buffers kept between backward and step
  int64_t optimizer_states = 0;  // Adam's moments plus any fp32 master copy
  int64_t total() const { return parameters + gradients + optimizer_states; }
};

// The Trainer calls these at fixed points of its loop and never asks which strategy is behind them: one
// process (LocalGradientSync), DDP all-reduce, or ZeRO's sharded variants. Every call is collective: every
// rank makes it, in the same order.
class GradientSync {
 public:
  virtual ~GradientSync();
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;
  // Once per train(), after the model is placed and before the first step (DDP: broadcast rank 0's
  // parameters and check that every rank holds the same structure; ZeRO: partition).
  virtual void prepare(torch::nn::Module& model) = 0;
  // Before each micro-step's backward: whether this backward ends an accumulation (only then do gradients
  // need to travel; the others run as DDP's no_sync).
  virtual void begin_backward(bool last_micro_step) = 0;
  // After the last micro-step's backward, before clipping: every rank's gradients become the world's mean.
  virtual void finish_gradients(const std::vector<at::Tensor>& params) = 0;
  // Sums a value over ranks (eval loss and metric counts).
  virtual double all_reduce_sum(double value) = 0;
  // The ranks' channel for everything that is not a gradient: barriers around saves, the logged loss, the
  // evaluation's rows, agreement checks. One process: a local communicator (every collective is the
  // identity).
  virtual dist::Communicator& communicator();
  // The strategy's name ("local", "ddp", "zero-1", ...): ranks check that they agree on it before step 1.
  virtual std::string strategy() const { return "local"; }

  // --- The optimizer. The defaults (one process, DDP) keep a full replica of berth's AdamW on every rank;
  // ZeRO overrides all of them to own a shard.
  // After prepare(): builds the optimizer over `spec` (a fresh one: state from an earlier train() is gone).
  virtual void create_optimizer(torch::nn::Module& model, const OptimizerSpec& spec);
  // After the last micro-step's backward: finish_gradients, the global norm, overflow check, clipping, the
  // AdamW update, gradients reset to none. `params` are the model's trainable parameters.
  virtual StepResult step(const std::vector<at::Tensor>& params, const StepOptions& options);
  virtual void set_lr(double lr);
  // Drops every gradient (the Trainer calls it before its first step and after a skipped one).
  virtual void zero_grad(const std::vector<at::Tensor>& params);
  // Checkpoints. save: every rank calls it with the same (temporary) checkpoint directory, which exists;
  // each writes what it owns (the default: rank 0 writes optimizer.safetensors). load: every rank reads
  // what it needs from a checkpoint written by any strategy and world size (ZeRO shards or a full
  // optimizer.safetensors) and places it (`placement`: "move" or "strict", as TrainingArguments).
  virtual void save_optimizer_state(const std::string& checkpoint_dir);
  virtual void load_optimizer_state(const std::string& checkpoint_dir, const std::string& placement,
                                    torch::nn::Module& model);
  // ZeRO-3 holds 1/N of each parameter between steps; before the model is saved or evaluated, every rank
  // calls gather_parameters() (full parameters in place) and after it release_parameters(). No-ops
  // elsewhere.
  virtual void gather_parameters() {}
  virtual void release_parameters() {}
  // What this rank holds now (call after a step, when gradients and optimizer state exist).
  virtual MemoryFootprint memory_footprint(torch::nn::Module& model) const;
  // The replica optimizer of the defaults (nullptr under ZeRO or before create_optimizer): for tests and
  // tools that inspect state.
  optim::AdamW* replica_optimizer() const { return optimizer_.get(); }

 protected:
  std::unique_ptr<optim::AdamW> optimizer_;

 private:
  void load_zero_checkpoint(const std::string& checkpoint_dir);
};

// One process: nothing to synchronise.
class LocalGradientSync final : public GradientSync {
 public:
  int64_t rank() const override { return 0; }
  int64_t world_size() const override { return 1; }
  void prepare(torch::nn::Module&) override {}
  void begin_backward(bool) override {}
  void finish_gradients(const std::vector<at::Tensor>&) override {}
  double all_reduce_sum(double value) override { return value; }
};

}  // namespace berth::train
