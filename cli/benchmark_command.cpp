// `berth benchmark`: times full training steps of a preset BERT on synthetic tokens, one JSON line out;
// with --inference, forward passes as `berth eval` runs them.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "berth/core/error.h"
#include "berth/core/runtime.h"
#include "berth/dist/ddp_gradient_sync.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/bert_presets.h"
#include "berth/optim/adamw.h"
#include "berth/optim/param_groups.h"
#include "berth/train/mixed_precision.h"
#include "berth/train/run_plan.h"
#include "command.h"

namespace berth::cli {
namespace {

struct BenchmarkOptions {
  std::string preset = "bert-mini";
  int64_t batch_size = 8;
  int64_t seq_len = 128;
  int steps = 10;
  int warmup = 2;
  int threads = 0;
  int64_t vocab_size = 30522;
  uint64_t seed = 0;
  int64_t bucket_cap_mb = 25;
  bool inference = false;
  bool bf16 = false;  // the forward (and loss) under bf16 autocast, as berth train --bf16
};

// The one place the optimizer is made, so the fused berth::optim::AdamW can replace torch's here.
// The Trainer's optimizer: berth's fused AdamW with HF's decay groups.
std::unique_ptr<optim::AdamW> make_optimizer(const torch::nn::Module& model) {
  optim::AdamWOptions options;
  options.lr = 1e-4;
  return std::make_unique<optim::AdamW>(optim::hf_param_groups(model, 0.01), options);
}

// --bf16 as berth train --bf16 resolves it on the CPU (an error where this CPU's torch cannot autocast to
// bf16).
train::Precision precision(const BenchmarkOptions& o) {
  return train::resolve_precision(false, o.bf16, c10::Device(c10::kCPU)).precision;
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
nlohmann::json timing_json(const BenchmarkOptions& o, const std::vector<double>& step, double flops,
                           int64_t world_size) {
  const double step_ms = median(step);
  nlohmann::json out;
  out["implementation"] = "berth";
  out["preset"] = o.preset;
  out["batch_size"] = o.batch_size;
  out["seq_len"] = o.seq_len;
  out["threads"] = at::get_num_threads();
  out["steps"] = o.steps;
  out["precision"] = o.bf16 ? "bf16" : "fp32";
  out["samples_per_second"] = static_cast<double>(o.batch_size * world_size) * 1000.0 / step_ms;
  out["step_ms"] = step_ms;
  out["min_step_ms"] = *std::min_element(step.begin(), step.end());
  out["model_tflop_per_step"] = flops * 1e-12;
  out["achieved_gflops"] = flops / (step_ms * 1e-3) * 1e-9;
  return out;
}

// --inference: forward passes without labels as Trainer::predict (`berth eval`) runs them: eval mode, no
// grad, fp32 or bf16 autocast. A forward's matmul FLOPs are a third of a training step's.
int run_inference(const BenchmarkOptions& o, const BertConfig& config, BertForSequenceClassification& model,
                  const at::Tensor& ids, const at::Tensor& mask, int64_t world_size, bool is_main) {
  const train::Precision compute = precision(o);
  using Clock = std::chrono::steady_clock;
  model->eval();
  torch::NoGradGuard no_grad;
  std::vector<double> step;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    const auto t0 = Clock::now();
    {
      const train::AutocastGuard autocast(compute, c10::DeviceType::CPU);
      at::Tensor logits = model->forward(ids, mask, {}, {}).logits;
    }
    const auto t1 = Clock::now();
    if (s >= o.warmup) step.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  nlohmann::json out = timing_json(o, step, step_flops(config, o.batch_size, o.seq_len) / 3.0, world_size);
  out["mode"] = "inference";
  out["forward_ms"] = out["step_ms"];
  if (is_main) std::cout << out.dump() << std::endl;
  return 0;
}

// DDP's communication: the same all-reduces with no backward to hide behind, against what each step waited.
nlohmann::json ddp_communication_json(const BenchmarkOptions& o, dist::DdpGradientSync* ddp,
                                      const std::vector<double>& sync_wait,
                                      const std::vector<double>& backward_end,
                                      const dist::ProcessContext& context) {
  nlohmann::json comm;
  // The same all-reduces with no backward to hide behind: what communication costs when fully exposed.
  std::vector<double> alone;
  for (int i = 0; i < std::max(3, o.steps / 2); ++i) alone.push_back(ddp->time_communication_alone() * 1e3);
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

int run_benchmark(const BenchmarkOptions& o) {
  BERTH_CHECK(o.batch_size >= 1 && o.seq_len >= 1,
              "benchmark: --batch-size and --seq-len must be >= 1, found ", o.batch_size, " and ", o.seq_len);
  BERTH_CHECK(o.steps >= 1 && o.warmup >= 0, "benchmark: --steps must be >= 1 and --warmup >= 0, found ",
              o.steps, " and ", o.warmup);
  if (o.threads > 0) runtime::configure_threads(runtime::ThreadOptions{o.threads});
  // Under a launcher every rank runs the same steps on its own tokens, with DDP between them.
  train::TrainingArguments dist_args;
  dist_args.device = "cpu";
  dist_args.ddp_bucket_cap_mb = o.bucket_cap_mb;
  const train::RunPlan plan = train::resolve_run_plan(dist_args);
  const dist::ProcessContext& context = plan.process;
  dist::GradientSync* sync = plan.gradient_sync.get();
  BertConfig config = bert_preset(o.preset, o.vocab_size);
  BERTH_CHECK(o.seq_len <= config.max_position_embeddings, "benchmark: --seq-len ", o.seq_len,
              " is longer than the model's ", config.max_position_embeddings,
              " positions. Fix: pass --seq-len <= ", config.max_position_embeddings);
  torch::manual_seed(o.seed);
  BertForSequenceClassification model(config, BertInitOptions{true, o.seed});
  if (o.inference) {
    torch::manual_seed(o.seed + static_cast<uint64_t>(context.env.rank));  // the tokens of a training run
    at::Tensor ids = torch::randint(config.vocab_size, {o.batch_size, o.seq_len}, torch::kLong);
    at::Tensor mask = torch::ones({o.batch_size, o.seq_len}, torch::kLong);
    return run_inference(o, config, model, ids, mask, context.env.world_size, context.is_main());
  }
  model->train();
  const train::Precision compute = precision(o);
  std::unique_ptr<optim::AdamW> optimizer = make_optimizer(*model);
  std::vector<at::Tensor> params;
  for (const auto& p : model->parameters()) params.push_back(p);
  sync->reducer().prepare(*model);
  torch::manual_seed(o.seed + static_cast<uint64_t>(context.env.rank));  // each rank its own tokens
  at::Tensor ids = torch::randint(config.vocab_size, {o.batch_size, o.seq_len}, torch::kLong);
  at::Tensor mask = torch::ones({o.batch_size, o.seq_len}, torch::kLong);
  at::Tensor labels = torch::randint(config.num_labels(), {o.batch_size}, torch::kLong);

  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::vector<double> forward, backward, optim, step, sync_wait;
  std::vector<double> backward_end;  // steady-clock ms at the end of each timed backward
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    const auto t0 = Clock::now();
    at::Tensor loss;
    {
      const train::AutocastGuard autocast(compute, c10::DeviceType::CPU);
      loss = model->forward(ids, mask, {}, labels).loss;
    }
    const auto t1 = Clock::now();
    sync->reducer().begin_backward(true);
    loss.backward();
    const auto t_backward = Clock::now();
    sync->reducer().finish_gradients(params);  // what is left of the all-reduce after backward: exposed
    const auto t2 = Clock::now();
    optimizer->step();
    // Gradients to none, not zeros: backward then writes them instead of adding into a zeroed buffer.
    optimizer->zero_grad_to_none();
    const auto t3 = Clock::now();
    if (s < o.warmup) continue;  // the first steps allocate and warm the caches
    forward.push_back(ms(t0, t1));
    backward.push_back(ms(t1, t_backward));
    sync_wait.push_back(ms(t_backward, t2));
    backward_end.push_back(std::chrono::duration<double, std::milli>(t_backward.time_since_epoch()).count());
    optim.push_back(ms(t2, t3));
    step.push_back(ms(t0, t3));
  }
  nlohmann::json comm;
  if (auto* ddp = dynamic_cast<dist::DdpGradientSync*>(sync))
    comm = ddp_communication_json(o, ddp, sync_wait, backward_end, context);
  nlohmann::json out =
      timing_json(o, step, step_flops(config, o.batch_size, o.seq_len), context.env.world_size);
  out["forward_ms"] = median(forward);
  out["backward_ms"] = median(backward);
  out["optimizer_ms"] = median(optim);
  if (!comm.empty()) {
    out["ranks"] = context.env.world_size;
    out.update(comm);
  }
  if (context.is_main()) std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

CommandAction add_benchmark_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "benchmark",
      "Time full training steps (forward, backward, AdamW) of a preset BERT on synthetic tokens");
  auto o = std::make_shared<BenchmarkOptions>();
  cmd->add_option("--model-preset", o->preset, "bert-tiny, bert-mini, bert-small or bert-base")
      ->capture_default_str();
  cmd->add_option("--batch-size", o->batch_size, "Sequences per step")->capture_default_str();
  cmd->add_option("--seq-len", o->seq_len, "Tokens per sequence")->capture_default_str();
  cmd->add_option("--steps", o->steps, "Timed steps (the medians are over these)")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed steps first")->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "Intra-op and BLAS threads; 0 = berth's default (see berth --help)")
      ->capture_default_str();
  cmd->add_option("--vocab-size", o->vocab_size, "Vocabulary size of the synthetic model")
      ->capture_default_str();
  cmd->add_option("--bucket-cap-mb", o->bucket_cap_mb, "Under a launcher: DDP's gradient bucket size")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the weights and the synthetic tokens")->capture_default_str();
  cmd->add_flag("--bf16", o->bf16,
                "Forward and loss under bf16 autocast, fp32 weights and AdamW state (berth train --bf16)");
  cmd->add_flag("--inference", o->inference,
                "Time forward passes only (no labels), in eval mode without grad, as berth eval runs them");
  return [o] { return run_benchmark(*o); };
}

}  // namespace berth::cli
