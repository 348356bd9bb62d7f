// ShardedOptimizer: the optimizer as the Trainer drives it, whether every rank holds all of its state (one
// process, DDP) or a shard (ZeRO); it finishes the reduction, clips and steps.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "berth/optim/adamw.h"
#include "berth/optim/param_groups.h"

namespace torch::nn {
class Module;
}

namespace berth::dist {

// What the Trainer asks the optimizer for: HF's parameter groups and AdamW's hyperparameters.
struct OptimizerSpec {
  std::vector<optim::NamedParamGroup> groups;
  optim::AdamWOptions adam;
};

// One optimizer step's inputs.
struct StepOptions {
  std::optional<double> lr;  // this step's learning rate (the scheduler's); unset: the last one given
  double max_grad_norm = 0;  // <= 0: no clipping
  // The factor the loss was multiplied by before backward (fp16's loss scaling); gradients are divided by
  // it before clipping and stepping. 1: no scaling.
  double loss_scale = 1;
  // true (loss scaling on): a non-finite gradient norm skips the step (gradients dropped, parameters and
  // optimizer state untouched) and is reported as overflow. false: the step runs whatever the norm (HF).
  bool skip_on_overflow = false;
};

struct StepResult {
  double grad_norm = 0;   // global norm of the unscaled gradients before clipping (over every rank's shard)
  bool overflow = false;  // the norm was inf/nan and the step was skipped (only with skip_on_overflow)
};

// Every call is collective.
class ShardedOptimizer {
 public:
  virtual ~ShardedOptimizer();
  // After GradientReducer::prepare(): a fresh optimizer over `spec` (state from an earlier train() is gone).
  virtual void create(torch::nn::Module& model, const OptimizerSpec& spec) = 0;
  // After the last micro-step's backward: the reducer's finish_gradients, the global norm, the overflow
  // check, clipping, the AdamW update at options.lr, gradients reset to none. `params`: the model's
  // trainable parameters.
  virtual StepResult step(const std::vector<at::Tensor>& params, const StepOptions& options) = 0;
  // Checkpoints. save: every rank calls it with the same (temporary) checkpoint directory, which exists; each
  // writes what it owns (a replica: rank 0 writes optimizer.safetensors). load: every rank reads what it
  // needs from a checkpoint written by any strategy and world size (ZeRO shards or a full
  // optimizer.safetensors) and places it (`placement`: "move" or "strict", as TrainingArguments).
  virtual void save_state(const std::string& checkpoint_dir) = 0;
  virtual void load_state(const std::string& checkpoint_dir, const std::string& placement,
                          torch::nn::Module& model) = 0;
  // Bytes of optimizer state this rank holds (Adam's moments plus any fp32 master copy).
  virtual int64_t state_bytes() const = 0;
};

}  // namespace berth::dist
