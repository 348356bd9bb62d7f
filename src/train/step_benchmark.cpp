// run_step_benchmark: `berth benchmark`'s timed training steps or forward passes of a preset BERT on
// synthetic tokens, on the CPU or a CUDA device.
#include "berth/train/step_benchmark.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "berth/core/error.h"
#include "berth/core/runtime.h"
#include "berth/device/device.h"
#include "berth/dist/ddp_gradient_sync.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/bert_presets.h"
#include "berth/optim/adamw.h"
#include "berth/optim/param_groups.h"
#include "berth/train/mixed_precision.h"
#include "berth/train/run_plan.h"

namespace berth::train {
namespace {

// The one place the optimizer is made, so the fused berth::optim::AdamW can replace torch's here.
// The Trainer's optimizer: berth's fused AdamW with HF's decay groups.
std::unique_ptr<optim::AdamW> make_optimizer(const torch::nn::Module& model) {
  optim::AdamWOptions options;
  options.lr = 1e-4;
  return std::make_unique<optim::AdamW>(optim::hf_param_groups(model, 0.01), options);
}

// --bf16 as berth train --bf16 resolves it on `device` (an error where this torch cannot autocast to bf16
// there).
Precision precision(const StepBenchmarkOptions& options, const c10::Device& device) {
  return resolve_precision(false, options.bf16, device).precision;
}

// CUDA runs asynchronously: a step ends when the device has finished it.
void wait_for(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Matmul FLOPs of one training step (forward 2·m·n·k per GEMM, backward twice that, so 6 per weight per
// token): encoder weights 4C² + 2CI per layer over B·T tokens, attention's two (T×T) GEMMs 12·L·B·T²·C,
// pooler and classifier over the B [CLS] tokens. Embeddings, LayerNorm, softmax etc. are not counted.
double step_flops(const BertConfig& c, int64_t batch, int64_t seq) {
  const double C = static_cast<double>(c.hidden_size), I = static_cast<double>(c.intermediate_size);
  const double L = static_cast<double>(c.num_hidden_layers), B = static_cast<double>(batch);
  const double T = static_cast<double>(seq);
  const double encoder = 6.0 * L * (4 * C * C + 2 * C * I) * B * T;
  const double attention = 12.0 * L * B * T * T * C;
  const double head = 6.0 * B * (C * C + C * static_cast<double>(c.num_labels()));
  return encoder + attention + head;
}

// The fields both modes print: sizes, samples/s over all ranks (each step runs world_size batches), the
// median and fastest step (on a shared machine the least disturbed one, steadier than the median for A/B
// runs) and the matmul FLOP rate per rank.
nlohmann::json timing_json(const StepBenchmarkOptions& options, const std::vector<double>& step, double flops,
                           int64_t world_size) {
  const double step_ms = median(step);
  nlohmann::json out;
  out["implementation"] = "berth";
  out["preset"] = options.preset;
  out["batch_size"] = options.batch_size;
  out["seq_len"] = options.seq_len;
  out["threads"] = at::get_num_threads();
  out["steps"] = options.steps;
  out["precision"] = options.bf16 ? "bf16" : "fp32";
  out["samples_per_second"] = static_cast<double>(options.batch_size * world_size) * 1000.0 / step_ms;
  out["step_ms"] = step_ms;
  out["min_step_ms"] = *std::min_element(step.begin(), step.end());
  out["model_tflop_per_step"] = flops * 1e-12;
  out["achieved_gflops"] = flops / (step_ms * 1e-3) * 1e-9;
  return out;
}

// --inference: forward passes without labels as Trainer::predict (`berth eval`) runs them: eval mode, no
// grad, fp32 or bf16 autocast. A forward's matmul FLOPs are a third of a training step's.
std::string run_inference(const StepBenchmarkOptions& options, const BertConfig& config,
                          BertForSequenceClassification& model, const at::Tensor& ids, const at::Tensor& mask,
                          const dist::ProcessContext& context) {
  const c10::Device device = ids.device();
  const Precision compute = precision(options, device);
  using Clock = std::chrono::steady_clock;
  model->eval();
  torch::NoGradGuard no_grad;
  std::vector<double> step;
  for (int s = 0; s < options.warmup + options.steps; ++s) {
    const auto t0 = Clock::now();
    {
      const AutocastGuard autocast(compute, device.type());
      at::Tensor logits = model->forward(ids, mask, {}, {}).logits;
    }
    wait_for(device);
    const auto t1 = Clock::now();
    if (s >= options.warmup) step.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  nlohmann::json out = timing_json(
      options, step, step_flops(config, options.batch_size, options.seq_len) / 3.0, context.env.world_size);
  out["mode"] = "inference";
  out["forward_ms"] = out["step_ms"];
  out["device"] = device_name(device);
  return context.is_main() ? out.dump() : std::string();
}

// DDP's communication: the same all-reduces with no backward to hide behind, against what each step waited.
nlohmann::json ddp_communication_json(const StepBenchmarkOptions& options, dist::DdpGradientSync* ddp,
                                      const std::vector<double>& sync_wait,
                                      const std::vector<double>& backward_end,
                                      const dist::ProcessContext& context) {
  nlohmann::json comm;
  // The same all-reduces with no backward to hide behind: what communication costs when fully exposed.
  std::vector<double> alone;
  for (int i = 0; i < std::max(3, options.steps / 2); ++i)
    alone.push_back(ddp->time_communication_alone() * 1e3);
  const double alone_ms = median(alone);
  const double exposed_ms = median(sync_wait);
  // Part of the wait is the other rank finishing its backward later (skew), not communication. On one
  // machine every rank reads the same monotonic clock, so each step's skew is the latest backward end over
  // ranks minus this rank's.
  if (context.env.local_world_size == context.env.world_size) {
    const std::string mine(reinterpret_cast<const char*>(backward_end.data()),
                           backward_end.size() * sizeof(double));
    const auto all = context.comm->all_gather_string(mine, "benchmark: backward end times");
    std::vector<double> skew, beyond_skew;
    for (size_t k = 0; k < backward_end.size(); ++k) {
      double latest = backward_end[k];
      for (const std::string& part : all)
        latest = std::max(latest, reinterpret_cast<const double*>(part.data())[k]);
      skew.push_back(latest - backward_end[k]);
      beyond_skew.push_back(std::max(0.0, sync_wait[k] - skew.back()));
    }
    const double comm_ms = median(beyond_skew);
    comm["skew_ms"] = median(skew);
    comm["exposed_comm_beyond_skew_ms"] = comm_ms;
    comm["hidden_fraction_beyond_skew"] = alone_ms > 0 ? std::max(0.0, 1.0 - comm_ms / alone_ms) : 0.0;
  }
  comm["world_size"] = context.env.world_size;
  comm["buckets"] = ddp->buckets().size();
  const dist::DdpStats stats = ddp->stats();
  comm["buckets_launched_in_backward"] = stats.buckets_launched_in_backward;
  comm["buckets_launched_after_backward"] = stats.buckets_launched_in_finish;
  if (stats.row_sparse_dense_rows > 0)
    comm["embedding_rows_sent_fraction"] =
        static_cast<double>(stats.row_sparse_rows) / static_cast<double>(stats.row_sparse_dense_rows);
  comm["all_reduce_alone_ms"] = alone_ms;
  comm["exposed_comm_ms"] = exposed_ms;
  comm["hidden_fraction"] = alone_ms > 0 ? std::max(0.0, 1.0 - exposed_ms / alone_ms) : 0.0;
  return comm;
}

// The timed training steps: forward with labels, backward, the gradient sync, AdamW, gradients to none.
struct TrainingTimes {
  std::vector<double> forward, backward, optimizer, step, sync_wait;
  std::vector<double> backward_end;  // steady-clock ms at the end of each timed backward
};

TrainingTimes time_training(const StepBenchmarkOptions& options, BertForSequenceClassification& model,
                            dist::GradientSync& sync, const std::vector<at::Tensor>& batch) {
  const c10::Device device = batch[0].device();
  const Precision compute = precision(options, device);
  std::unique_ptr<optim::AdamW> optimizer = make_optimizer(*model);
  std::vector<at::Tensor> params;
  for (const auto& p : model->parameters()) params.push_back(p);
  sync.reducer().prepare(*model);
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  TrainingTimes times;
  for (int s = 0; s < options.warmup + options.steps; ++s) {
    const auto t0 = Clock::now();
    at::Tensor loss;
    {
      const AutocastGuard autocast(compute, device.type());
      loss = model->forward(batch[0], batch[1], {}, batch[2]).loss;
    }
    wait_for(device);
    const auto t1 = Clock::now();
    sync.reducer().begin_backward(true);
    loss.backward();
    wait_for(device);
    const auto t_backward = Clock::now();
    sync.reducer().finish_gradients(params);  // what is left of the all-reduce after backward: exposed
    const auto t2 = Clock::now();
    optimizer->step();
    // Gradients to none, not zeros: backward then writes them instead of adding into a zeroed buffer.
    optimizer->zero_grad_to_none();
    wait_for(device);
    const auto t3 = Clock::now();
    if (s < options.warmup) continue;  // the first steps allocate and warm the caches
    times.forward.push_back(ms(t0, t1));
    times.backward.push_back(ms(t1, t_backward));
    times.sync_wait.push_back(ms(t_backward, t2));
    times.backward_end.push_back(
        std::chrono::duration<double, std::milli>(t_backward.time_since_epoch()).count());
    times.optimizer.push_back(ms(t2, t3));
    times.step.push_back(ms(t0, t3));
  }
  return times;
}

void check_options(const StepBenchmarkOptions& options) {
  BERTH_CHECK(options.batch_size >= 1 && options.seq_len >= 1,
              "benchmark: --batch-size and --seq-len must be >= 1, found ", options.batch_size, " and ",
              options.seq_len);
  BERTH_CHECK(options.steps >= 1 && options.warmup >= 0,
              "benchmark: --steps must be >= 1 and --warmup >= 0, found ", options.steps, " and ",
              options.warmup);
}

}  // namespace

std::string run_step_benchmark(const StepBenchmarkOptions& options) {
  check_options(options);
  if (options.threads > 0) runtime::configure_threads(runtime::ThreadOptions{options.threads});
  // Under a launcher every rank runs the same steps on its own tokens, with DDP between them.
  TrainingArguments dist_args;
  dist_args.device = options.device;
  dist_args.ddp_bucket_cap_mb = options.bucket_cap_mb;
  const RunPlan plan = resolve_run_plan(dist_args);
  const dist::ProcessContext& context = plan.process;
  BertConfig config = bert_preset(options.preset, options.vocab_size);
  BERTH_CHECK(options.seq_len <= config.max_position_embeddings, "benchmark: --seq-len ", options.seq_len,
              " is longer than the model's ", config.max_position_embeddings,
              " positions. Fix: pass --seq-len <= ", config.max_position_embeddings);
  // Built and drawn on the CPU, then moved: the same weights and tokens on every device.
  torch::manual_seed(options.seed);
  BertForSequenceClassification model(config, BertInitOptions{true, options.seed});
  model->to(plan.device());
  torch::manual_seed(options.seed + static_cast<uint64_t>(context.env.rank));  // each rank its own tokens
  at::Tensor ids = torch::randint(config.vocab_size, {options.batch_size, options.seq_len}, torch::kLong);
  at::Tensor mask = torch::ones({options.batch_size, options.seq_len}, torch::kLong);
  at::Tensor labels = torch::randint(config.num_labels(), {options.batch_size}, torch::kLong);
  ids = ids.to(plan.device());
  mask = mask.to(plan.device());
  if (options.inference) return run_inference(options, config, model, ids, mask, context);
  model->train();
  dist::GradientSync* sync = plan.gradient_sync.get();
  const TrainingTimes times = time_training(options, model, *sync, {ids, mask, labels.to(plan.device())});
  nlohmann::json out = timing_json(
      options, times.step, step_flops(config, options.batch_size, options.seq_len), context.env.world_size);
  out["forward_ms"] = median(times.forward);
  out["backward_ms"] = median(times.backward);
  out["optimizer_ms"] = median(times.optimizer);
  out["device"] = device_name(plan.device());
  if (auto* ddp = dynamic_cast<dist::DdpGradientSync*>(sync)) {
    out["ranks"] = context.env.world_size;
    out.update(ddp_communication_json(options, ddp, times.sync_wait, times.backward_end, context));
  }
  return context.is_main() ? out.dump() : std::string();
}

}  // namespace berth::train
