// ZeroGradientSync: ZeRO stages 1-3 on 2 Gloo ranks (threads over one HashStore) against DDP and one process.
#include "berth/dist/zero_gradient_sync.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "berth/dist/ddp_gradient_sync.h"
#include "berth/dist/zero3_parameters.h"
#include "berth/dist/zero_checkpoint.h"
#include "berth/model/auto_model.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/bert_presets.h"
#include "berth/model/model_presets.h"
#include "berth/optim/adamw.h"
#include "berth/optim/clip_grad.h"
#include "berth/optim/param_groups.h"
#include "support/rank_threads.h"
#include "support/test_support.h"

namespace berth::dist {
namespace {

// fc1 -> tanh -> fc2, times a constant buffer.
struct ZeroGradientSyncNetImpl : torch::nn::Module {
  ZeroGradientSyncNetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(6, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 3));
    scale = register_buffer("scale", torch::ones({3}));
  }
  at::Tensor forward(const at::Tensor& x) { return fc2(torch::tanh(fc1(x))) * scale; }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  at::Tensor scale;
};
TORCH_MODULE(ZeroGradientSyncNet);

at::Tensor zero_gradient_sync_data(uint64_t seed, std::vector<int64_t> shape) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(shape, gen, torch::kFloat32);
}

BertConfig zero_gradient_sync_tiny_config() {
  BertConfig config;
  config.vocab_size = 64;
  config.hidden_size = 32;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 2;
  config.intermediate_size = 64;
  config.max_position_embeddings = 32;
  config.hidden_dropout_prob = 0;
  config.attention_probs_dropout_prob = 0;
  config.set_num_labels(2);
  return config;
}

// The models the tests train: one module with a custom forward, one HF-shaped BERT, and the families whose
// output layer is tied to their input embeddings (ZeRO-3 uses the embeddings block twice per forward): a
// llama-tiny-like and a GPT-2 causal LM, a RoBERTa masked LM.
enum class Model { Net, Bert, LlamaTied, Gpt2Tied, RobertaMlm };

struct Workload {
  Model kind;
  std::shared_ptr<torch::nn::Module> module;
  ZeroGradientSyncNet net{nullptr};
  BertForSequenceClassification bert{nullptr};
  std::shared_ptr<TaskModel> task_model;
};

constexpr int64_t kTiedVocab = 60;

// The tied families' configs: presets narrowed to hidden 32 (llama, gpt2), the RoBERTa masked-LM golden's.
PretrainedConfig tied_config(Model kind) {
  if (kind == Model::RobertaMlm)
    return PretrainedConfig::load(berth::testing::golden_dir() + "/encoders/roberta_masked_lm/config.json");
  PretrainedConfig config = model_preset(kind == Model::LlamaTied ? "llama-tiny" : "gpt2-tiny", kTiedVocab);
  if (kind == Model::LlamaTied) {
    config.set_int("hidden_size", 32);
    config.set_int("intermediate_size", 48);
  } else {
    config.set_int("n_embd", 32);
  }
  return config;
}

Workload make_model(Model kind, uint64_t seed) {
  Workload w;
  w.kind = kind;
  if (kind == Model::Net) {
    torch::manual_seed(seed);
    w.net = ZeroGradientSyncNet();
    w.module = w.net.ptr();
  } else if (kind == Model::Bert) {
    BertInitOptions init;
    init.seed = seed;
    w.bert = BertForSequenceClassification(zero_gradient_sync_tiny_config(), init);
    w.module = w.bert.ptr();
  } else {
    const ModelTask task = kind == Model::RobertaMlm ? ModelTask::MaskedLM : ModelTask::CausalLM;
    w.task_model = build_task_model(tied_config(kind), task, {true, seed});
    w.module = std::shared_ptr<torch::nn::Module>(w.task_model, &w.task_model->module());
    w.module->eval();  // no dropout: ranks and one process must compute the same
  }
  return w;
}

constexpr int kSteps = 3;
constexpr int64_t kTiedThreshold = 32;
constexpr int64_t kB = 4;  // rows per rank per step

// Step k's batch for both ranks together (rows [r*kB, (r+1)*kB) are rank r's).
struct Batch {
  at::Tensor x, y;
};
Batch batch(Model kind, int k) {
  if (kind == Model::Net)
    return {zero_gradient_sync_data(100 + k, {2 * kB, 6}), zero_gradient_sync_data(200 + k, {2 * kB, 3})};
  auto gen = at::make_generator<at::CPUGeneratorImpl>(300 + k);
  if (kind == Model::Bert)
    return {at::randint(1, 64, {2 * kB, 8}, gen, torch::kInt64),
            at::randint(0, 2, {2 * kB}, gen, torch::kInt64)};
  // Language models: ids past RoBERTa's pad (1); causal LMs predict the ids themselves, the masked LM every
  // third token, so each row counts the same tokens and micro-batch means average to the batch's.
  const at::Tensor ids = at::randint(3, kTiedVocab, {2 * kB, 9}, gen, torch::kInt64);
  if (kind != Model::RobertaMlm) return {ids, ids};
  const at::Tensor every_third = (at::arange(9) % 3 == 1).expand({2 * kB, 9});
  return {ids, at::where(every_third, ids, at::full_like(ids, -100))};
}

at::Tensor zero_gradient_sync_loss_of(Workload& w, const at::Tensor& x, const at::Tensor& y) {
  if (w.kind == Model::Net) return torch::mse_loss(w.net->forward(x), y);
  if (w.kind == Model::Bert) return w.bert->forward(x, {}, {}, y).loss;
  return w.task_model->forward_batch({{"input_ids", x}, {"labels", y}}).loss;
}

std::vector<at::Tensor> trainable(Workload& w) {
  std::vector<at::Tensor> out;
  for (const auto& p : w.module->parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

OptimizerSpec spec_of(Workload& w) {
  OptimizerSpec spec;
  spec.groups = optim::hf_param_groups(*w.module, 0.01);
  spec.adam.lr = 1e-2;
  return spec;
}

using testing::expect_ok;
using testing::max_diff;
using testing::run_ranks;

// One process, the combined batch, K steps of clip + berth's AdamW.
std::map<std::string, at::Tensor> single_process(Model kind, double max_grad_norm,
                                                 std::vector<double>* norms) {
  Workload w = make_model(kind, 1);
  optim::AdamW optimizer(spec_of(w).groups, spec_of(w).adam);
  for (int k = 0; k < kSteps; ++k) {
    optimizer.zero_grad_to_none();
    const Batch b = batch(kind, k);
    zero_gradient_sync_loss_of(w, b.x, b.y).backward();
    const double norm = optim::clip_grad_norm(trainable(w), max_grad_norm);
    if (norms) norms->push_back(norm);
    optimizer.step();
  }
  std::map<std::string, at::Tensor> out;
  for (const auto& item : w.module->named_parameters()) out[item.key()] = item.value().detach().clone();
  return out;
}

// 2 DDP ranks with 2 micro-steps each: finish_gradients + clip + AdamW (the replica path).
std::map<std::string, at::Tensor> ddp_ranks(Model kind, double max_grad_norm) {
  std::vector<Workload> ws{make_model(kind, 1), make_model(kind, 7)};
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    Workload& w = ws[r];
    DdpGradientSync sync(comm, DdpOptions{1e-3, false, true, 0});
    sync.prepare(*w.module);
    optim::AdamW optimizer(spec_of(w).groups, spec_of(w).adam);
    for (int k = 0; k < kSteps; ++k) {
      optimizer.zero_grad_to_none();
      const Batch b = batch(kind, k);
      for (int m = 0; m < 2; ++m) {
        const int64_t begin = r * kB + m * (kB / 2);
        sync.begin_backward(m == 1);
        (zero_gradient_sync_loss_of(w, b.x.narrow(0, begin, kB / 2), b.y.narrow(0, begin, kB / 2)) / 2)
            .backward();
      }
      sync.finish_gradients(trainable(w));
      optim::clip_grad_norm(trainable(w), max_grad_norm);
      optimizer.step();
    }
  }));
  std::map<std::string, at::Tensor> out;
  for (const auto& item : ws[0].module->named_parameters()) out[item.key()] = item.value().detach().clone();
  return out;
}

struct Case {
  std::string name;
  Model model;
  ZeroOptions options;
};

std::string model_name(Model m) {
  switch (m) {
    case Model::Net:
      return "Net";
    case Model::Bert:
      return "Bert";
    case Model::LlamaTied:
      return "LlamaTied";
    case Model::Gpt2Tied:
      return "Gpt2Tied";
    case Model::RobertaMlm:
      return "RobertaMlm";
  }
  return "";
}

struct RankResult {
  int64_t released = 0;  // parameters without data after prepare (partitioned by stage 3)
  std::vector<double> norms;
  ZeroStats stats;
  MemoryFootprint footprint;
};

// 2 ZeRO ranks with 2 micro-steps each, through step(); every rank's parameters end identical.
std::vector<Workload> zero_ranks(const Case& c, double max_grad_norm, std::vector<RankResult>& results) {
  std::vector<Workload> ws{make_model(c.model, 1), make_model(c.model, 7)};
  results.assign(2, {});
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    Workload& w = ws[r];
    ZeroGradientSync sync(comm, c.options);
    sync.prepare(*w.module);
    for (const at::Tensor& p : trainable(w)) results[r].released += p.numel() == 0 ? 1 : 0;
    sync.create(*w.module, spec_of(w));
    sync.zero_grad(trainable(w));
    for (int k = 0; k < kSteps; ++k) {
      const Batch b = batch(c.model, k);
      for (int m = 0; m < 2; ++m) {
        const int64_t begin = r * kB + m * (kB / 2);
        sync.begin_backward(m == 1);
        (zero_gradient_sync_loss_of(w, b.x.narrow(0, begin, kB / 2), b.y.narrow(0, begin, kB / 2)) / 2)
            .backward();
      }
      StepOptions step;
      step.max_grad_norm = max_grad_norm;
      const StepResult result = sync.step(trainable(w), step);
      EXPECT_FALSE(result.overflow);
      results[r].norms.push_back(result.grad_norm);
      for (const at::Tensor& p : trainable(w)) EXPECT_FALSE(p.grad().defined()) << "gradients end as none";
    }
    results[r].stats = sync.stats();
    results[r].footprint = sync.memory_footprint(*w.module);
    sync.gather();  // stage 3: full parameters to compare (no-op before); the sync's end
                    // unpartitions
  }));
  return ws;
}

class ZeroEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(ZeroEquivalence, TwoRanksMatchDdpAndOneProcessWithAccumulationAndClipping) {
  const Case& c = GetParam();
  const double max_grad_norm = c.model == Model::Net ? 0.05 : 0.1;
  std::vector<double> single_norms;
  const auto expected = single_process(c.model, max_grad_norm, &single_norms);
  const auto ddp = ddp_ranks(c.model, max_grad_norm);
  std::vector<RankResult> results;
  std::vector<Workload> ws = zero_ranks(c, max_grad_norm, results);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(results[r].norms.size(), static_cast<size_t>(kSteps));
    for (int k = 0; k < kSteps; ++k) {
      EXPECT_NEAR(results[r].norms[k], single_norms[k], 1e-5 * single_norms[k])
          << "rank " << r << " step " << k;
      EXPECT_GT(results[r].norms[k], max_grad_norm) << "clipping must be active";
    }
    for (const auto& item : ws[r].module->named_parameters()) {
      EXPECT_LT(max_diff(item.value(), expected.at(item.key())), 1e-5) << "rank " << r << " " << item.key();
      EXPECT_LT(max_diff(item.value(), ddp.at(item.key())), 1e-5) << "rank " << r << " " << item.key();
    }
    const ZeroStats& s = results[r].stats;
    EXPECT_EQ(s.steps, kSteps);
    // Stage 1 reduces once per step; stages 2-3 every micro-step.
    const int64_t reductions_per_round = s.reductions / (c.options.stage == 1 ? kSteps : 2 * kSteps);
    EXPECT_GE(reductions_per_round, 1);
    EXPECT_EQ(s.reductions % (c.options.stage == 1 ? kSteps : 2 * kSteps), 0);
    if (c.options.reduce_bucket_size < 1000) {
      EXPECT_GT(reductions_per_round, 2) << "several buckets";
    }
    // Stage 1 without overlap_comm reduces in step(); every other case from the hooks during backward.
    if (c.options.stage == 1 && !c.options.overlap_comm) {
      EXPECT_EQ(s.buckets_launched_in_backward, 0);
    } else {
      EXPECT_GT(s.buckets_launched_in_backward, 0);
    }
    if (!c.options.reduce_scatter) {
      EXPECT_EQ(s.reduce_collectives, s.reductions);  // one all-reduce per bucket
    } else if (c.options.stage < 3) {
      EXPECT_GT(s.reduce_collectives, s.reductions);  // one reduce per owner of a bucket's pieces
    }
    // Stage 3 with the default persistence threshold keeps every parameter of the tiny BERT whole; at 0 it
    // partitions every one, the tied embeddings included.
    if (c.options.stage < 3 || c.options.stage3_param_persistence_threshold == 0) {
      EXPECT_GT(s.gathered_bytes, 0);
    }
    if (c.options.stage == 3 && c.options.stage3_param_persistence_threshold == 0) {
      EXPECT_EQ(results[r].released, static_cast<int64_t>(trainable(ws[r]).size()));
    }
    if (c.options.stage == 3 && c.options.stage3_param_persistence_threshold == kTiedThreshold) {
      EXPECT_GT(results[r].released, 0);
    }
  }
  // Parameters agree bit for bit across ranks.
  for (const auto& item : ws[0].module->named_parameters())
    EXPECT_EQ(max_diff(item.value(), ws[1].module->named_parameters()[item.key()]), 0.0) << item.key();
}

ZeroOptions opts(int stage) {
  ZeroOptions o;
  o.stage = stage;
  return o;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (Model m : {Model::Net, Model::Bert}) {
    for (int stage : {1, 2, 3}) {
      if (stage == 3 && m == Model::Net) continue;  // stage 3 partitions BERT's blocks
      const std::string prefix = model_name(m) + "Stage" + std::to_string(stage);
      out.push_back({prefix + "Defaults", m, opts(stage)});
      ZeroOptions small = opts(stage);
      small.reduce_bucket_size = m == Model::Net ? 40 : 600;
      small.allgather_bucket_size = m == Model::Net ? 30 : 500;
      small.stage3_param_persistence_threshold = 0;
      out.push_back({prefix + "SmallBuckets", m, small});
      ZeroOptions overlap = small;
      overlap.overlap_comm = true;
      out.push_back({prefix + "OverlapSmallBuckets", m, overlap});
      ZeroOptions all_reduce = small;
      all_reduce.reduce_scatter = false;
      all_reduce.allgather_partitions = false;
      all_reduce.contiguous_gradients = false;
      out.push_back({prefix + "AllReduceBroadcastNonContiguous", m, all_reduce});
      ZeroOptions offload = overlap;
      offload.offload_optimizer.device = "cpu";
      offload.offload_optimizer.pin_memory = true;
      out.push_back({prefix + "OffloadOptimizer", m, offload});
      if (stage == 3) {
        ZeroOptions param = offload;
        param.offload_param.device = "cpu";
        out.push_back({prefix + "OffloadParam", m, param});
      }
    }
  }
  return out;
}

// The tied families: stages 1 and 2 against DDP, stage 3 with their matrices partitioned (threshold 32: norms
// and biases whole), everything partitioned (0), with prefetching, and with the pieces offloaded.
std::vector<Case> tied_cases() {
  std::vector<Case> out;
  for (Model m : {Model::LlamaTied, Model::Gpt2Tied, Model::RobertaMlm}) {
    const std::string prefix = model_name(m);
    for (int stage : {1, 2}) {
      ZeroOptions o = opts(stage);
      o.reduce_bucket_size = 2000;
      o.allgather_bucket_size = 2000;
      o.overlap_comm = true;
      out.push_back({prefix + "Stage" + std::to_string(stage), m, o});
    }
    ZeroOptions matrices = opts(3);
    matrices.stage3_param_persistence_threshold = kTiedThreshold;
    out.push_back({prefix + "Stage3Matrices", m, matrices});
    ZeroOptions all = matrices;
    all.stage3_param_persistence_threshold = 0;
    all.reduce_bucket_size = 2000;
    out.push_back({prefix + "Stage3Threshold0", m, all});
    ZeroOptions prefetch = all;
    prefetch.overlap_comm = true;
    prefetch.stage3_prefetch_bucket_size = 5000;  // about one layer ahead
    out.push_back({prefix + "Stage3Threshold0Prefetch", m, prefetch});
    ZeroOptions offload = prefetch;
    offload.offload_param.device = "cpu";
    offload.offload_optimizer.device = "cpu";
    out.push_back({prefix + "Stage3OffloadParam", m, offload});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(TiedFamilies, ZeroEquivalence, ::testing::ValuesIn(tied_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(ZeroGradientSync, ZeroEquivalence, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(ZeroGradientSync, StrategyNamesTheStage) {
  auto comm = make_local_communicator();
  EXPECT_EQ(ZeroGradientSync(comm, opts(1)).strategy(), "zero-1");
  EXPECT_EQ(ZeroGradientSync(comm, opts(2)).strategy(), "zero-2");
  EXPECT_EQ(ZeroGradientSync(comm, opts(3)).strategy(), "zero-3");
}

TEST(ZeroGradientSync, BadOptionsNameTheKnobAndTheFix) {
  auto comm = make_local_communicator();
  auto error_of = [&](const ZeroOptions& o) {
    return berth::testing::error_text([&] { ZeroGradientSync sync(comm, o); });
  };
  berth::testing::expect_contains(error_of(opts(4)),
                                  {"stage 4", "Fix: set zero_optimization.stage to 1, 2 or 3"});
  berth::testing::expect_contains(error_of(opts(0)), {"stage 0 means no ZeRO"});
  ZeroOptions param = opts(2);
  param.offload_param.device = "cpu";
  berth::testing::expect_contains(error_of(param), {"offload_param needs stage 3", "found stage 2"});
  ZeroOptions nvme = opts(1);
  nvme.offload_optimizer.device = "nvme";
  berth::testing::expect_contains(error_of(nvme), {"offload_optimizer.device 'nvme'", "\"cpu\" or \"none\""});
  ZeroOptions bucket = opts(2);
  bucket.reduce_bucket_size = 0;
  berth::testing::expect_contains(error_of(bucket), {"reduce_bucket_size must be a positive", "found 0"});
  bucket = opts(2);
  bucket.allgather_bucket_size = -1;
  berth::testing::expect_contains(error_of(bucket), {"allgather_bucket_size", "found -1"});
}

TEST(ZeroGradientSync, StepBeforeCreateOptimizerIsAnError) {
  Workload w = make_model(Model::Net, 1);
  ZeroGradientSync sync(make_local_communicator(), opts(2));
  sync.prepare(*w.module);
  berth::testing::expect_contains(berth::testing::error_text([&] { sync.step(trainable(w), {}); }),
                                  {"step before create", "optimizer().create(model, spec)"});
}

// World size 1 (a local communicator): offload alone, still the single-process result.
TEST(ZeroGradientSync, OneProcessWithOffloadMatchesPlainAdamW) {
  std::vector<double> norms;
  const auto expected = single_process(Model::Bert, 0.5, &norms);
  for (int stage : {1, 2}) {
    Workload w = make_model(Model::Bert, 1);
    ZeroOptions o = opts(stage);
    o.offload_optimizer.device = "cpu";
    o.reduce_bucket_size = 1000;
    o.overlap_comm = stage == 2;
    ZeroGradientSync sync(make_local_communicator(), o);
    sync.prepare(*w.module);
    sync.create(*w.module, spec_of(w));
    for (int k = 0; k < kSteps; ++k) {
      const Batch b = batch(Model::Bert, k);
      sync.begin_backward(true);
      zero_gradient_sync_loss_of(w, b.x, b.y).backward();
      StepOptions step;
      step.max_grad_norm = 0.5;
      EXPECT_NEAR(sync.step(trainable(w), step).grad_norm, norms[k], 1e-5 * norms[k]);
    }
    for (const auto& item : w.module->named_parameters())
      EXPECT_LT(max_diff(item.value(), expected.at(item.key())), 1e-6)
          << "stage " << stage << " " << item.key();
    // The master copy lives apart from the parameters (offload): its bytes count as optimizer state.
    const MemoryFootprint f = sync.memory_footprint(*w.module);
    EXPECT_EQ(f.optimizer_states, 3 * f.parameters) << stage;
  }
}

TEST(ZeroGradientSync, LossScaleDividesAndOverflowSkipsTheStep) {
  Workload w = make_model(Model::Net, 1);
  ZeroGradientSync sync(make_local_communicator(), opts(2));
  sync.prepare(*w.module);
  sync.create(*w.module, spec_of(w));
  const at::Tensor before = w.net->fc1->weight.detach().clone();
  const Batch b = batch(Model::Net, 0);
  (zero_gradient_sync_loss_of(w, b.x, b.y) * std::numeric_limits<float>::infinity()).backward();
  StepOptions step;
  step.loss_scale = 1024;
  step.skip_on_overflow = true;
  const StepResult result = sync.step(trainable(w), step);
  EXPECT_TRUE(result.overflow);
  EXPECT_FALSE(std::isfinite(result.grad_norm));
  EXPECT_EQ(max_diff(w.net->fc1->weight, before), 0.0);
  EXPECT_EQ(sync.optimizer_step_count(), 0);

  // Scaled by 1024 and divided back: the unscaled norm.
  std::vector<double> norms;
  single_process(Model::Net, 0, &norms);
  (zero_gradient_sync_loss_of(w, b.x, b.y) * 1024).backward();
  EXPECT_NEAR(sync.step(trainable(w), step).grad_norm, norms[0], 1e-5 * norms[0]);
  EXPECT_EQ(sync.optimizer_step_count(), 1);
}

// Bytes per rank at each stage with 2 ranks (optimizer sharded from stage 1, gradients from 2, parameters 3).
std::vector<MemoryFootprint> footprints(const BertConfig& config, ZeroOptions o) {
  std::vector<BertForSequenceClassification> models;
  for (int r = 0; r < 2; ++r) {
    BertInitOptions init;
    init.seed = 1;
    models.emplace_back(config, init);
  }
  std::vector<MemoryFootprint> out(2);
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    ZeroGradientSync sync(comm, o);
    sync.prepare(*models[r]);
    OptimizerSpec spec;
    spec.groups = optim::hf_param_groups(*models[r], 0.01);
    sync.create(*models[r], spec);
    out[r] = sync.memory_footprint(*models[r]);
  }));
  return out;
}

TEST(ZeroGradientSync, MemoryFootprintShardsOptimizerThenGradients) {
  const BertConfig config = zero_gradient_sync_tiny_config();
  int64_t numel = 0;
  {
    BertForSequenceClassification m(config);
    for (const auto& p : m->parameters()) numel += p.numel();
  }
  const int64_t full = numel * 4;
  const auto s1 = footprints(config, opts(1));
  const auto s2 = footprints(config, opts(2));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(s1[r].parameters, full);
    EXPECT_EQ(s1[r].gradients, full);
    EXPECT_NEAR(static_cast<double>(s1[r].optimizer_states), full, 8.0) << "m + v of half the elements";
    EXPECT_EQ(s2[r].parameters, full);
    EXPECT_NEAR(static_cast<double>(s2[r].gradients), full / 2.0, 4.0);
    EXPECT_EQ(s2[r].optimizer_states, s1[r].optimizer_states);
  }
  EXPECT_EQ(s1[0].optimizer_states + s1[1].optimizer_states, 2 * full);
}

// The numbers for the report: bert-mini (4 layers, hidden 256, 30522-token vocabulary) on 2 ranks.
TEST(ZeroGradientSync, BertMiniBytesPerRankByStage) {
  BertConfig config = bert_preset("bert-mini");
  config.set_num_labels(2);
  std::vector<std::vector<MemoryFootprint>> f;
  for (int stage : {1, 2, 3}) {
    f.push_back(footprints(config, opts(stage)));
    for (int r = 0; r < 2; ++r)
      std::cout << "bert-mini zero-" << stage << " rank " << r << ": parameters "
                << f.back()[r].parameters / 1e6 << " MB, gradients " << f.back()[r].gradients / 1e6
                << " MB, optimizer " << f.back()[r].optimizer_states / 1e6 << " MB, total "
                << f.back()[r].total() / 1e6 << " MB\n";
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_LT(f[1][r].total(), f[0][r].total());
    EXPECT_LT(f[2][r].parameters, f[1][r].parameters * 2 / 3);  // about half plus what stays whole
  }
}

// Save with 2 ranks at stage 2, load the shards on 1 rank at stage 1 (another world size and stage): every
// parameter's state is the 2 ranks' pieces end to end; then one more step on both sides agrees.
TEST(ZeroGradientSync, CheckpointRoundTripAcrossWorldSizes) {
  berth::testing::TempDir dir;
  const std::string ckpt = dir.path().string();
  std::vector<Workload> ws{make_model(Model::Net, 1), make_model(Model::Net, 1)};
  std::vector<std::vector<at::Tensor>> exp_avgs(2);
  std::vector<std::vector<ParamSegment>> owned(2);
  FlatLayout layout;
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    Workload& w = ws[r];
    ZeroOptions o = opts(2);
    o.reduce_bucket_size = 40;
    ZeroGradientSync sync(comm, o);
    sync.prepare(*w.module);
    sync.create(*w.module, spec_of(w));
    for (int k = 0; k < 2; ++k) {
      const Batch b = batch(Model::Net, k);
      sync.begin_backward(true);
      zero_gradient_sync_loss_of(w, b.x.narrow(0, r * kB, kB), b.y.narrow(0, r * kB, kB)).backward();
      sync.step(trainable(w), {});
    }
    sync.save_state(ckpt);
    comm->barrier("after save");
    owned[r] = sync.owned_segments();
    for (size_t i = 0; i < owned[r].size(); ++i) exp_avgs[r].push_back(sync.exp_avg(i).clone());
    if (r == 0) layout = sync.layout();
  }));
  ASSERT_TRUE(has_zero_shards(ckpt));

  Workload one = make_model(Model::Net, 1);
  {
    torch::NoGradGuard no_grad;
    for (const auto& item : one.module->named_parameters())
      item.value().copy_(ws[0].module->named_parameters()[item.key()]);
  }
  ZeroGradientSync sync(make_local_communicator(), opts(1));
  sync.prepare(*one.module);
  sync.create(*one.module, spec_of(one));
  sync.load_state(ckpt, "move", *one.module);
  EXPECT_EQ(sync.optimizer_step_count(), 2);
  // Rebuild the flat exp_avg from the two ranks' pieces and compare with the single rank's.
  at::Tensor flat = at::zeros({layout.numel});
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < owned[r].size(); ++i) {
      const ParamSegment& s = owned[r][i];
      flat.narrow(0, layout.entries[s.param].offset + s.begin, s.numel()).copy_(exp_avgs[r][i]);
    }
  ASSERT_EQ(sync.owned_segments().size(), layout.entries.size());
  for (size_t i = 0; i < sync.owned_segments().size(); ++i) {
    const ParamSegment& s = sync.owned_segments()[i];
    EXPECT_EQ(max_diff(sync.exp_avg(i), flat.narrow(0, layout.entries[s.param].offset + s.begin, s.numel())),
              0.0)
        << layout.entries[s.param].name;
  }
  for (const auto& item : one.module->named_parameters())
    EXPECT_EQ(max_diff(item.value(), ws[0].module->named_parameters()[item.key()]), 0.0) << item.key();
}

}  // namespace
}  // namespace berth::dist
