// RunPlan: the arguments, the DeepSpeed/FSDP config and the launcher's environment turned into one set of
// decisions, once per run; the strategy factory sits here, above both dist and the Trainer.
#include "berth/train/run_plan.h"

#include <torch/torch.h>

#include <utility>

#include "berth/device/device.h"
#include "berth/dist/ddp_gradient_sync.h"
#include "berth/dist/local_gradient_sync.h"
#include "berth/dist/zero_gradient_sync.h"
#include "berth/optim/scheduler_kwargs.h"
#include "berth/train/deepspeed_config.h"
#include "berth/train/mixed_precision.h"

namespace berth::train {

namespace {

// One line for the console: "zero-2 (overlap_comm, offload_optimizer cpu)"; "" for stage 0.
std::string describe_zero(const dist::ZeroOptions& zero) {
  if (zero.stage == 0) return "";
  std::string details;
  auto add = [&](const std::string& item) { details += (details.empty() ? "" : ", ") + item; };
  if (zero.overlap_comm) add("overlap_comm");
  if (zero.offload_optimizer.enabled())
    add("offload_optimizer cpu" + std::string(zero.offload_optimizer.pin_memory ? " pinned" : ""));
  if (zero.offload_param.enabled())
    add("offload_param cpu" + std::string(zero.offload_param.pin_memory ? " pinned" : ""));
  return "zero-" + std::to_string(zero.stage) + (details.empty() ? "" : " (" + details + ")");
}

// ZeRO when asked for (any world size: CPU offload alone makes sense on one rank), DDP for several ranks,
// else one process.
std::shared_ptr<dist::GradientSync> make_gradient_sync(const TrainingArguments& args,
                                                       const dist::ZeroOptions& zero,
                                                       std::shared_ptr<dist::Communicator> comm) {
  if (zero.stage > 0) return std::make_shared<dist::ZeroGradientSync>(std::move(comm), zero);
  if (comm->world_size() == 1) return dist::make_local_gradient_sync();
  dist::DdpOptions ddp;
  if (args.ddp_bucket_cap_mb) ddp.bucket_cap_mb = static_cast<double>(*args.ddp_bucket_cap_mb);
  ddp.find_unused_parameters = args.ddp_find_unused_parameters.value_or(false);
  return std::make_shared<dist::DdpGradientSync>(std::move(comm), ddp);
}

}  // namespace

double RunPlan::max_grad_norm(const TrainingArguments& args) const {
  return deepspeed_ ? deepspeed_->gradient_clipping : args.max_grad_norm;
}

optim::SchedulerOptions RunPlan::schedule(const TrainingArguments& args, int64_t total_steps) const {
  if (deepspeed_ && deepspeed_->scheduler) {
    // Finalized on a copy: every train() (and search trial) fills the pending step counts for its own length.
    DeepSpeedConfig config = *deepspeed_;
    finalize_deepspeed_config(config, args, total_steps);
    return config.scheduler->options;
  }
  return optim::hf_scheduler_options(args.lr_scheduler_type, args.resolved_warmup_steps(total_steps),
                                     total_steps, args.learning_rate, args.lr_scheduler_kwargs.value_or(""));
}

MemoryEstimate RunPlan::estimate_memory(int64_t num_params, int64_t largest_layer_params) const {
  return estimate_zero_memory(num_params, process.comm->world_size(), zero_.stage, precision.precision,
                              zero_.offload_optimizer.enabled(), zero_.offload_param.enabled(),
                              zero_.stage == 3 ? largest_layer_params : 0);
}

dist::ProcessContext local_process_context(const TrainingArguments& args) {
  dist::ProcessContext context;
  // meta is accepted (placement works on it; tests and examples use it as a second device on CPU-only
  // machines) and refused by train/evaluate/predict, which need data.
  context.device = resolve_device(parse_device(args.device), query_cuda());
  context.comm = dist::make_local_communicator();
  return context;
}

RunPlan resolve_run_plan(const TrainingArguments& args, dist::ProcessContext context,
                         std::optional<int64_t> hidden_size) {
  RunPlan plan;
  plan.process = std::move(context);
  const int64_t world_size = plan.process.comm->world_size();
  if (args.deepspeed) {
    DeepSpeedConfig config = resolve_deepspeed_config(*args.deepspeed, args, world_size, &plan.warnings);
    fill_hidden_size_auto(config, hidden_size);
    plan.deepspeed_ = std::make_shared<const DeepSpeedConfig>(std::move(config));
    plan.zero_ = plan.deepspeed_->zero;
  } else if (!args.fsdp.empty()) {
    plan.zero_ = dist::zero_options_from_fsdp(args.fsdp);
  }
  plan.sharding = describe_zero(plan.zero_);
  plan.gradient_sync = make_gradient_sync(args, plan.zero_, plan.process.comm);
  if (plan.device().type() != c10::kMeta) {
    // A DeepSpeed config has already merged --fp16/--bf16 with its own fp16/bf16 blocks.
    const Precision asked = plan.deepspeed_ ? plan.deepspeed_->precision.precision
                            : args.fp16     ? Precision::fp16
                            : args.bf16     ? Precision::bf16
                                            : Precision::fp32;
    plan.precision =
        resolve_precision(asked == Precision::fp16, asked == Precision::bf16, plan.device(),
                          plan.deepspeed_ ? plan.deepspeed_->precision.loss_scale : LossScaleOptions{});
  }
  return plan;
}

RunPlan resolve_run_plan(const TrainingArguments& args, const EnvLookup& env,
                         std::optional<int64_t> hidden_size) {
  dist::ProcessOptions options;
  options.device = args.device;
  options.backend = args.ddp_backend.value_or("auto");
  options.rendezvous = args.rendezvous;
  options.timeout = std::chrono::seconds(args.ddp_timeout);
  return resolve_run_plan(args, dist::init_process_context(options, env), hidden_size);
}

}  // namespace berth::train
