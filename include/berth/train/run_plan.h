// RunPlan: everything a training run decides before its first step, resolved once from TrainingArguments, the
// DeepSpeed or FSDP configuration and the launcher's environment. The Trainer executes a plan; it never reads
// a DeepSpeed config or names a parallel strategy.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "berth/device/dist_env.h"
#include "berth/dist/gradient_sync.h"
#include "berth/dist/process_context.h"
#include "berth/dist/zero_options.h"
#include "berth/optim/lr_scheduler.h"
#include "berth/train/memory_estimate.h"
#include "berth/train/precision_options.h"
#include "berth/train/training_arguments.h"

namespace berth::train {

struct DeepSpeedConfig;

class RunPlan {
 public:
  dist::ProcessContext process;                       // rank, device (bound), communicator
  std::shared_ptr<dist::GradientSync> gradient_sync;  // the strategy the arguments ask for
  PrecisionOptions precision;                         // for the device (fp32 on meta, which computes nothing)
  std::string sharding;                               // "zero-2 (overlap_comm)"; "" without ZeRO
  // One line each: what the config silently overrides in the arguments, keys berth does not read. Rank 0
  // prints them once (the Trainer, when it receives the plan).
  std::vector<std::string> warnings;

  c10::Device device() const { return process.device; }
  int zero_stage() const { return zero_.stage; }  // 0 without ZeRO
  bool is_main() const { return process.is_main(); }
  // The clipping norm of every step under `args` (a search trial may change it): a DeepSpeed config's
  // gradient_clipping when there is one (HF's rule; the config's default 0 turns clipping off), else
  // args.max_grad_norm.
  double max_grad_norm(const TrainingArguments& args) const;
  // The learning-rate schedule of a run of `total_steps` optimizer steps: the DeepSpeed config's scheduler
  // (its "auto" step counts filled, mismatching explicit ones an error), else args.lr_scheduler_type with
  // args' warmup.
  optim::SchedulerOptions schedule(const TrainingArguments& args, int64_t total_steps) const;
  // The ZeRO paper's estimate of what one rank holds under this plan; `largest_layer_params`: the largest
  // group of parameters ZeRO-3 gathers at once.
  MemoryEstimate estimate_memory(int64_t num_params, int64_t largest_layer_params) const;

 private:
  friend RunPlan resolve_run_plan(const TrainingArguments&, dist::ProcessContext, std::optional<int64_t>);
  std::shared_ptr<const DeepSpeedConfig> deepspeed_;  // args.deepspeed resolved; null without one
  dist::ZeroOptions zero_;                            // stage 0 without ZeRO
};

// The plan of this process's run: joins the launcher's process group (dist::init_process_context with the
// arguments' device, ddp_backend, rendezvous and ddp_timeout), parses args.deepspeed once and builds the
// gradient sync: ZeRO when the config or args.fsdp ask for it (any world size: offload alone makes sense on
// one), DDP for several ranks, else one process. Throws berth::Error for a config that contradicts args.
// `hidden_size` (model_hidden_size of the model's config) fills the config's hidden-size "auto" keys as HF
// does (fill_hidden_size_auto); a config with such keys and no hidden size is a berth::Error.
RunPlan resolve_run_plan(const TrainingArguments& args, const EnvLookup& env = process_env(),
                         std::optional<int64_t> hidden_size = std::nullopt);
// The same over a context already made (a Trainer without a plan: this process alone on args.device).
RunPlan resolve_run_plan(const TrainingArguments& args, dist::ProcessContext context,
                         std::optional<int64_t> hidden_size = std::nullopt);

// The context of a process that runs alone on args.device (meta accepted): a local communicator.
dist::ProcessContext local_process_context(const TrainingArguments& args);

}  // namespace berth::train
