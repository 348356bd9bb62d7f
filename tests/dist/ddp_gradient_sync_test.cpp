// DdpGradientSync: ranks as threads over one HashStore, checked against single-process gradients and steps.
#include "berth/dist/ddp_gradient_sync.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <thread>

#include "berth/dist/local_gradient_sync.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/bert_presets.h"
#include "berth/optim/adamw.h"
#include "berth/optim/clip_grad.h"
#include "berth/optim/param_groups.h"
#include "support/rank_threads.h"
#include "support/test_support.h"

namespace berth::dist {
namespace {

using berth::testing::contains;

// fc1 -> tanh -> fc2 (+ extra, when the branch is taken) times a constant buffer.
struct NetImpl : torch::nn::Module {
  explicit NetImpl(int64_t hidden = 16, int64_t width = 6) {
    fc1 = register_module("fc1", torch::nn::Linear(width, hidden));
    fc2 = register_module("fc2", torch::nn::Linear(hidden, 3));
    extra = register_module("extra", torch::nn::Linear(hidden, 3));
    scale = register_buffer("scale", torch::ones({3}));
  }
  at::Tensor forward(const at::Tensor& x, bool use_extra = true) {
    at::Tensor h = torch::tanh(fc1(x));
    at::Tensor out = fc2(h);
    if (use_extra) out = out + extra(h);
    return out * scale;
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, extra{nullptr};
  at::Tensor scale;
};
TORCH_MODULE(Net);

Net make_net(uint64_t seed, int64_t hidden = 16, int64_t width = 6) {
  torch::manual_seed(seed);
  return Net(hidden, width);
}

std::vector<at::Tensor> params_of(torch::nn::Module& m) { return m.parameters(); }

// Deterministic data without touching the global generator from rank threads.
at::Tensor data(uint64_t seed, std::vector<int64_t> shape) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(shape, gen, torch::kFloat32);
}

at::Tensor loss_of(Net& net, const at::Tensor& x, const at::Tensor& y, bool use_extra = true) {
  return torch::mse_loss(net->forward(x, use_extra), y);
}

using testing::expect_ok;
using testing::max_diff;
using testing::run_ranks;

TEST(DdpGradientSync, PrepareCopiesRankZerosParametersAndBuffers) {
  std::vector<Net> nets{make_net(1), make_net(2)};
  {
    torch::NoGradGuard no_grad;
    nets[1]->scale.fill_(2.0);
  }
  Net reference = make_net(1);
  ASSERT_GT(max_diff(nets[0]->fc1->weight, nets[1]->fc1->weight), 1e-3);  // they start different
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    DdpGradientSync sync(comm);
    sync.prepare(*nets[r]);
  }));
  const auto p0 = nets[0]->named_parameters();
  const auto p1 = nets[1]->named_parameters();
  const auto pref = reference->named_parameters();
  for (const auto& item : p0) {
    EXPECT_EQ(max_diff(item.value(), p1[item.key()]), 0.0) << item.key();
    EXPECT_EQ(max_diff(item.value(), pref[item.key()]), 0.0) << item.key() << " changed on rank 0";
  }
  EXPECT_EQ(max_diff(nets[1]->scale, torch::ones({3})), 0.0);
}

// Each rank's gradient after finish_gradients is the mean of the two single-process gradients.
void check_mean_gradients(double bucket_cap_mb, bool expect_several_buckets) {
  const std::vector<at::Tensor> xs{data(10, {4, 6}), data(11, {4, 6})};
  const std::vector<at::Tensor> ys{data(20, {4, 3}), data(21, {4, 3})};
  std::vector<at::Tensor> expected;
  {
    std::vector<std::vector<at::Tensor>> grads;
    for (int r = 0; r < 2; ++r) {
      Net single = make_net(1);
      loss_of(single, xs[r], ys[r]).backward();
      std::vector<at::Tensor> g;
      for (auto& p : single->parameters()) g.push_back(p.grad().clone());
      grads.push_back(g);
    }
    for (size_t i = 0; i < grads[0].size(); ++i) expected.push_back((grads[0][i] + grads[1][i]) / 2.0);
  }
  std::vector<Net> nets{make_net(1), make_net(2)};
  std::vector<DdpStats> before_finish(2), after(2);
  std::vector<size_t> n_buckets(2);
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    DdpOptions options;
    options.bucket_cap_mb = bucket_cap_mb;
    DdpGradientSync sync(comm, options);
    sync.prepare(*nets[r]);
    n_buckets[r] = sync.buckets().size();
    sync.begin_backward(true);
    loss_of(nets[r], xs[r], ys[r]).backward();
    before_finish[r] = sync.stats();
    sync.finish_gradients(params_of(*nets[r]));
    after[r] = sync.stats();
  }));
  for (int r = 0; r < 2; ++r) {
    const auto params = nets[r]->parameters();
    ASSERT_EQ(params.size(), expected.size());
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_LT(max_diff(params[i].grad(), expected[i]), 1e-6) << r << " " << i;
    if (expect_several_buckets) {
      EXPECT_EQ(n_buckets[r], 6u);  // one per parameter at this cap
    } else {
      EXPECT_EQ(n_buckets[r], 1u);
    }
    // Every parameter took part, so every bucket left during backward, before finish_gradients.
    EXPECT_EQ(before_finish[r].buckets_launched_in_backward, static_cast<int64_t>(n_buckets[r]));
    EXPECT_EQ(after[r].buckets_launched_in_finish, 0);
    EXPECT_EQ(after[r].steps, 1);
    // 6*16+16 + 16*3+3 + 16*3+3 floats, plus the one-element unused-parameter flag.
    EXPECT_EQ(after[r].all_reduce_bytes, (112 + 51 + 51 + 1) * 4);
  }
}

TEST(DdpGradientSync, GradientsAreTheMeanOverRanksWithManySmallBuckets) { check_mean_gradients(1e-4, true); }
TEST(DdpGradientSync, GradientsAreTheMeanOverRanksWithOneLargeBucket) { check_mean_gradients(25, false); }

TEST(DdpGradientSync, BucketsFollowReverseParameterOrder) {
  Net net = make_net(1);
  std::vector<DdpBucketInfo> buckets;
  expect_ok(run_ranks(1, [&](int, std::shared_ptr<Communicator> comm) {
    DdpOptions options;
    options.bucket_cap_mb = 600.0 / (1024.0 * 1024.0);  // 472 bytes fit, fc1.weight's 384 more do not
    DdpGradientSync sync(comm, options);
    sync.prepare(*net);
    buckets = sync.buckets();
  }));
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].param_names,
            (std::vector<std::string>{"extra.bias", "extra.weight", "fc2.bias", "fc2.weight", "fc1.bias"}));
  EXPECT_EQ(buckets[1].param_names, (std::vector<std::string>{"fc1.weight"}));
  EXPECT_EQ(buckets[0].numel, 3 + 48 + 3 + 48 + 16);
  EXPECT_EQ(buckets[0].dtype, "Float");
}

// 2 ranks x batch B for K steps == 1 process x batch 2B (mean loss), optionally with 2 micro-steps per step
// and clipping.
enum class Opt { Sgd, AdamW };

std::unique_ptr<torch::optim::Optimizer> make_optimizer(Net& net, Opt opt) {
  if (opt == Opt::Sgd)
    return std::make_unique<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1));
  optim::NamedParamGroup group;
  for (const auto& item : net->named_parameters()) {
    group.names.push_back(item.key());
    group.params.push_back(item.value());
  }
  group.weight_decay = 0.01;
  optim::AdamWOptions options;
  options.lr = 1e-2;
  return std::make_unique<optim::AdamW>(std::vector<optim::NamedParamGroup>{group}, options);
}

void check_equivalence(Opt opt, int micro_steps, double max_grad_norm) {
  constexpr int kSteps = 3;
  constexpr int64_t kB = 4;
  std::vector<at::Tensor> xs, ys;
  for (int k = 0; k < kSteps; ++k) {
    xs.push_back(data(100 + k, {2 * kB, 6}));
    ys.push_back(data(200 + k, {2 * kB, 3}));
  }
  Net single = make_net(1);
  {
    auto optimizer = make_optimizer(single, opt);
    for (int k = 0; k < kSteps; ++k) {
      optimizer->zero_grad();
      loss_of(single, xs[k], ys[k]).backward();
      if (max_grad_norm > 0) optim::clip_grad_norm(single->parameters(), max_grad_norm);
      optimizer->step();
    }
  }
  std::vector<Net> nets{make_net(1), make_net(7)};
  std::vector<double> norms(2);
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    DdpOptions options;
    options.bucket_cap_mb = 1e-4;
    DdpGradientSync sync(comm, options);
    sync.prepare(*nets[r]);
    auto optimizer = make_optimizer(nets[r], opt);
    const int64_t micro = kB / micro_steps;
    for (int k = 0; k < kSteps; ++k) {
      for (auto& p : nets[r]->parameters()) p.mutable_grad() = at::Tensor();  // zero_grad_to_none
      for (int m = 0; m < micro_steps; ++m) {
        const int64_t begin = r * kB + m * micro;
        sync.begin_backward(m + 1 == micro_steps);
        (loss_of(nets[r], xs[k].narrow(0, begin, micro), ys[k].narrow(0, begin, micro)) / micro_steps)
            .backward();
      }
      sync.finish_gradients(nets[r]->parameters());
      if (max_grad_norm > 0) norms[r] = optim::clip_grad_norm(nets[r]->parameters(), max_grad_norm);
      optimizer->step();
    }
    // Gradient accumulation: only the last micro-step of each step communicated.
    EXPECT_EQ(sync.stats().buckets_launched_in_backward, kSteps * 6);
  }));
  if (max_grad_norm > 0) {
    EXPECT_EQ(norms[0], norms[1]);
    EXPECT_GT(norms[0], max_grad_norm);  // clipping really happened
  }
  const auto expected = single->named_parameters();
  for (int r = 0; r < 2; ++r)
    for (const auto& item : nets[r]->named_parameters())
      EXPECT_LT(max_diff(item.value(), expected[item.key()]), 1e-5) << "rank " << r << " " << item.key();
}

TEST(DdpGradientSync, TwoRanksMatchOneProcessWithTwiceTheBatchSgd) { check_equivalence(Opt::Sgd, 1, 0); }
TEST(DdpGradientSync, TwoRanksMatchOneProcessWithTwiceTheBatchAdamW) { check_equivalence(Opt::AdamW, 1, 0); }
TEST(DdpGradientSync, TwoRanksMatchOneProcessWithAccumulationAndClippingSgd) {
  check_equivalence(Opt::Sgd, 2, 0.05);
}
TEST(DdpGradientSync, TwoRanksMatchOneProcessWithAccumulationAndClippingAdamW) {
  check_equivalence(Opt::AdamW, 2, 0.05);
}

TEST(DdpGradientSync, NoSyncMicroStepCommunicatesNothing) {
  const std::vector<at::Tensor> xs{data(10, {4, 6}), data(11, {4, 6})};
  const std::vector<at::Tensor> ys{data(20, {4, 3}), data(21, {4, 3})};
  std::vector<std::vector<at::Tensor>> local(2);
  for (int r = 0; r < 2; ++r) {
    Net single = make_net(1);
    loss_of(single, xs[r], ys[r]).backward();
    for (auto& p : single->parameters()) local[r].push_back(p.grad().clone());
  }
  std::vector<Net> nets{make_net(1), make_net(2)};
  std::vector<DdpStats> stats(2);
  std::vector<std::vector<at::Tensor>> grads(2);
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    DdpGradientSync sync(comm, DdpOptions{1e-4, false, true});
    sync.prepare(*nets[r]);
    sync.begin_backward(false);
    loss_of(nets[r], xs[r], ys[r]).backward();
    stats[r] = sync.stats();
    for (auto& p : nets[r]->parameters()) grads[r].push_back(p.grad().clone());
  }));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(stats[r].buckets_launched_in_backward, 0);
    EXPECT_EQ(stats[r].buckets_launched_in_finish, 0);
    EXPECT_EQ(stats[r].all_reduce_bytes, 0);
    for (size_t i = 0; i < grads[r].size(); ++i)
      EXPECT_EQ(max_diff(grads[r][i], local[r][i]), 0.0) << r << " " << i;
  }
  EXPECT_GT(max_diff(grads[0][0], grads[1][0]), 1e-4);  // local, not averaged
}

// Rank 0 takes the `extra` branch; rank 1 takes it when both_use_extra.
std::vector<std::string> run_unused(bool find_unused, bool rank0_uses_extra, std::vector<Net>& nets,
                                    std::vector<at::Tensor>& rank0_local_extra_grad) {
  const std::vector<at::Tensor> xs{data(10, {4, 6}), data(11, {4, 6})};
  const std::vector<at::Tensor> ys{data(20, {4, 3}), data(21, {4, 3})};
  {
    Net single = make_net(1);
    loss_of(single, xs[0], ys[0], rank0_uses_extra).backward();
    if (rank0_uses_extra)
      rank0_local_extra_grad = {single->extra->weight.grad().clone(), single->extra->bias.grad().clone()};
  }
  nets = {make_net(1), make_net(2)};
  return run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    DdpOptions options;
    options.bucket_cap_mb = 1e-4;
    options.find_unused_parameters = find_unused;
    DdpGradientSync sync(comm, options);
    sync.prepare(*nets[r]);
    sync.begin_backward(true);
    loss_of(nets[r], xs[r], ys[r], r == 0 && rank0_uses_extra).backward();
    sync.finish_gradients(nets[r]->parameters());
  });
}

TEST(DdpGradientSync, UnusedParameterOnEveryRankIsAnErrorNamingItAndTheFix) {
  std::vector<Net> nets;
  std::vector<at::Tensor> unused;
  const auto errors = run_unused(false, false, nets, unused);
  std::cout << "rank 0's " << errors[0] << "\n";
  for (int r = 0; r < 2; ++r)
    berth::testing::expect_contains(
        errors[r], {"2 trainable parameter(s) got no gradient", "rank " + std::to_string(r), "extra.weight",
                    "extra.bias", "find_unused_parameters=true", "--ddp-find-unused-parameters"});
}

TEST(DdpGradientSync, UnusedParameterOnOneRankFailsEveryRankWithoutHanging) {
  std::vector<Net> nets;
  std::vector<at::Tensor> rank0_extra;
  const auto errors = run_unused(false, true, nets, rank0_extra);
  std::cout << "rank 0's " << errors[0] << "\n";
  berth::testing::expect_contains(errors[0], {"on 1 other rank(s)", "find_unused_parameters=true"});
  berth::testing::expect_contains(errors[1], {"rank 1", "extra.weight", "find_unused_parameters=true"});
}

TEST(DdpGradientSync, FindUnusedParametersAveragesWithZeros) {
  std::vector<Net> nets;
  std::vector<at::Tensor> rank0_extra;
  expect_ok(run_unused(true, true, nets, rank0_extra));
  ASSERT_EQ(rank0_extra.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(nets[r]->extra->weight.grad().defined()) << r;
    EXPECT_LT(max_diff(nets[r]->extra->weight.grad(), rank0_extra[0] / 2.0), 1e-7) << r;
    EXPECT_LT(max_diff(nets[r]->extra->bias.grad(), rank0_extra[1] / 2.0), 1e-7) << r;
  }
  // Unused on every rank: the grad is defined and zero.
  expect_ok(run_unused(true, false, nets, rank0_extra));
  for (int r = 0; r < 2; ++r) EXPECT_EQ(nets[r]->extra->weight.grad().abs().sum().item<double>(), 0.0);
}

TEST(DdpGradientSync, MismatchedModelsFailPrepareNamingTheFirstDifference) {
  std::vector<Net> nets{make_net(1, 16), make_net(1, 17)};
  const auto errors = run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    DdpGradientSync sync(comm);
    sync.prepare(*nets[r]);
  });
  std::cout << "rank 0's " << errors[0] << "\n";
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(contains(errors[r], "fc1.weight")) << errors[r];
    EXPECT_FALSE(contains(errors[r], "fc2.weight")) << errors[r];  // the first difference, not a later one
  }
}

// The overlap benchmark's two numbers on a model big enough for several 1 MiB buckets: communication alone
// vs what finish_gradients still waited for after backward.
TEST(DdpGradientSync, ReportsExposedAndStandaloneCommunication) {
  constexpr int kSteps = 5;
  std::vector<Net> nets{make_net(1, 1024, 512), make_net(2, 1024, 512)};
  std::vector<DdpStats> stats(2);
  std::vector<double> alone(2);
  std::vector<size_t> n_buckets(2);
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    DdpOptions options;
    options.bucket_cap_mb = 1;
    DdpGradientSync sync(comm, options);
    sync.prepare(*nets[r]);
    n_buckets[r] = sync.buckets().size();
    const at::Tensor x = data(30 + r, {64, 512}), y = data(40 + r, {64, 3});
    alone[r] = sync.time_communication_alone();  // warm-up
    alone[r] = sync.time_communication_alone();
    for (int k = 0; k < kSteps; ++k) {
      for (auto& p : nets[r]->parameters()) p.mutable_grad() = at::Tensor();
      sync.begin_backward(true);
      loss_of(nets[r], x, y).backward();
      sync.finish_gradients(nets[r]->parameters());
    }
    stats[r] = sync.stats();
  }));
  for (int r = 0; r < 2; ++r) {
    EXPECT_GT(n_buckets[r], 1u);
    EXPECT_EQ(stats[r].steps, kSteps);
    EXPECT_EQ(stats[r].buckets_launched_in_backward, kSteps * static_cast<int64_t>(n_buckets[r]));
    EXPECT_GT(alone[r], 0.0);
    std::cout << "rank " << r << ": " << n_buckets[r] << " buckets, "
              << stats[r].all_reduce_bytes / kSteps / 1e6 << " MB per step; communication alone "
              << alone[r] * 1e3 << " ms; exposed after backward "
              << stats[r].exposed_comm_seconds / kSteps * 1e3 << " ms per step\n";
  }
}

// bert-tiny (2 layers, hidden 128, full 30522-token vocabulary, dropout off) through DDP: the gradients are
// the mean of the single-process ones, every bucket leaves during backward, and the overlap numbers.
TEST(DdpGradientSync, BertTinyGradientsAreTheMeanAndBucketsOverlapBackward) {
  BertConfig config = bert_preset("bert-tiny");
  config.hidden_dropout_prob = 0;
  config.attention_probs_dropout_prob = 0;
  config.set_num_labels(2);
  auto make_bert = [&](uint64_t seed) {
    BertInitOptions init;
    init.seed = seed;
    return BertForSequenceClassification(config, init);
  };
  constexpr int64_t kB = 8, kT = 64;
  auto batch = [&](int r) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(50 + r);
    return std::make_pair(at::randint(1, config.vocab_size, {kB, kT}, gen, torch::kInt64),
                          at::randint(0, 2, {kB}, gen, torch::kInt64));
  };
  std::vector<std::vector<at::Tensor>> local(2);
  for (int r = 0; r < 2; ++r) {
    auto single = make_bert(1);
    const auto [ids, labels] = batch(r);
    single->forward(ids, {}, {}, labels).loss.backward();
    for (auto& p : single->parameters()) local[r].push_back(p.grad().clone());
  }
  std::vector<BertForSequenceClassification> nets{make_bert(1), make_bert(2)};
  constexpr int kSteps = 4;
  std::vector<DdpStats> stats(2);
  std::vector<double> alone(2), backward_seconds(2);
  std::vector<size_t> n_buckets(2);
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    DdpOptions options;
    options.bucket_cap_mb = 0.5;  // several buckets besides the word embeddings (15.6 MB, ready last)
    DdpGradientSync sync(comm, options);
    sync.prepare(*nets[r]);
    n_buckets[r] = sync.buckets().size();
    const auto [ids, labels] = batch(r);
    sync.begin_backward(true);
    nets[r]->forward(ids, {}, {}, labels).loss.backward();
    sync.finish_gradients(nets[r]->parameters());
    const auto params = nets[r]->parameters();
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_LT(max_diff(params[i].grad(), (local[0][i] + local[1][i]) / 2.0), 1e-6)
          << "rank " << r << " " << i;

    sync.time_communication_alone();  // warm-up
    alone[r] = sync.time_communication_alone();
    sync.reset_stats();
    for (int k = 0; k < kSteps; ++k) {
      for (auto& p : params) p.mutable_grad() = at::Tensor();
      const at::Tensor loss = nets[r]->forward(ids, {}, {}, labels).loss;
      const auto start = std::chrono::steady_clock::now();
      sync.begin_backward(true);
      loss.backward();
      backward_seconds[r] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      sync.finish_gradients(params);
    }
    stats[r] = sync.stats();
  }));
  for (int r = 0; r < 2; ++r) {
    EXPECT_GT(n_buckets[r], 2u);
    EXPECT_EQ(stats[r].buckets_launched_in_backward, kSteps * static_cast<int64_t>(n_buckets[r]));
    // The word embeddings (30522 rows) travel as the rows the two batches touched, and the mean above is
    // still exact.
    EXPECT_EQ(stats[r].row_sparse_dense_rows, kSteps * 30522);
    EXPECT_GT(stats[r].row_sparse_rows, 0);
    EXPECT_LT(stats[r].row_sparse_rows, stats[r].row_sparse_dense_rows / 10);
    std::cout << "bert-tiny rank " << r << ": " << n_buckets[r] << " buckets of <= 0.5 MiB, "
              << stats[r].all_reduce_bytes / kSteps / 1e6 << " MB per step; communication alone "
              << alone[r] * 1e3 << " ms; backward " << backward_seconds[r] / kSteps * 1e3
              << " ms; exposed after backward " << stats[r].exposed_comm_seconds / kSteps * 1e3
              << " ms per step\n";
  }
}

// The memory report reads gradients at the step's peak: right after finish_gradients every gradient is a
// view of a bucket, so the buckets' bytes are the gradients' bytes (and the optimizer holds nothing yet).
TEST(DdpGradientSync, MemoryFootprintCountsTheBucketsAtThePeak) {
  std::vector<Net> nets{make_net(1), make_net(1)};
  int64_t trainable_bytes = 0;
  for (const auto& p : nets[0]->parameters()) trainable_bytes += p.numel() * 4;
  std::vector<MemoryFootprint> held(2);
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    DdpGradientSync sync(comm, DdpOptions{0.0001});  // several buckets
    sync.prepare(*nets[r]);
    EXPECT_EQ(sync.memory_footprint(*nets[r]).gradients, 0) << "no step yet";
    sync.begin_backward(true);
    loss_of(nets[r], data(10 + r, {4, 6}), data(20 + r, {4, 3})).backward();
    sync.finish_gradients(params_of(*nets[r]));
    held[r] = sync.memory_footprint(*nets[r]);
    EXPECT_GT(sync.buckets().size(), 1u);
  }));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(held[r].gradients, trainable_bytes) << r;
    EXPECT_EQ(held[r].parameters, trainable_bytes) << r;
    EXPECT_EQ(held[r].optimizer_states, 0) << r;
  }
}

// One process: the gradients backward left, counted before the step frees them; Adam's two moments after.
TEST(LocalGradientSync, MemoryFootprintMeasuresGradientsBeforeTheStepFreesThem) {
  Net net = make_net(1);
  int64_t bytes = 0;
  for (const auto& p : net->parameters()) bytes += p.numel() * 4;
  LocalGradientSync sync;
  sync.reducer().prepare(*net);
  sync.optimizer().create(*net, OptimizerSpec{optim::hf_param_groups(*net, 0.0), optim::AdamWOptions{1e-2}});
  loss_of(net, data(10, {4, 6}), data(20, {4, 3})).backward();
  sync.optimizer().step(params_of(*net), StepOptions{});
  for (const auto& p : net->parameters()) EXPECT_FALSE(p.grad().defined()) << "the step frees gradients";
  const MemoryFootprint held = sync.memory_footprint(*net);
  EXPECT_EQ(held.gradients, bytes);
  EXPECT_EQ(held.parameters, bytes);
  EXPECT_EQ(held.optimizer_states, 2 * bytes);
}

}  // namespace
}  // namespace berth::dist
