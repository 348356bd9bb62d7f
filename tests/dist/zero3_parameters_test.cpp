// PartitionedParameters (ZeRO stage 3): 2 ranks as threads over Gloo, checked against the same BERT
// unpartitioned.
#include "berth/dist/zero3_parameters.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <thread>

#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/bert_presets.h"
#include "support/flat_layouts.h"
#include "support/rank_threads.h"
#include "support/test_support.h"

namespace berth::dist {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;

using testing::expect_ok;
using testing::max_diff;
using testing::run_ranks;

// 3 encoder layers, hidden 32: 6 blocks; parameters of more than 32 elements are partitioned, LayerNorms and
// the hidden-size biases stay whole (persistent) with the threshold below.
BertConfig zero3_config(int64_t layers = 3) {
  BertConfig config;
  config.vocab_size = 100;
  config.hidden_size = 32;
  config.num_hidden_layers = layers;
  config.num_attention_heads = 2;
  config.intermediate_size = 64;
  config.max_position_embeddings = 32;
  config.hidden_dropout_prob = 0;
  config.attention_probs_dropout_prob = 0;
  config.set_num_labels(2);
  return config;
}

constexpr int64_t kThreshold = 32;

ZeroOptions stage3(bool overlap = false, bool offload = false) {
  ZeroOptions options;
  options.stage = 3;
  options.stage3_param_persistence_threshold = kThreshold;
  options.overlap_comm = overlap;
  options.stage3_prefetch_bucket_size = 9000;  // one encoder layer ahead (8256 elements)
  if (offload) options.offload_param.device = "cpu";
  return options;
}

BertForSequenceClassification zero3_parameters_make_model(const BertConfig& config, uint64_t seed = 7) {
  BertInitOptions init;
  init.seed = seed;
  return BertForSequenceClassification(config, init);
}

FlatLayout layout_of(torch::nn::Module& model) { return testing::module_flat_layout(model, true); }

std::pair<at::Tensor, at::Tensor> batch_of(const BertConfig& config, int rank, int64_t b = 4,
                                           int64_t t = 12) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(100 + rank);
  return {at::randint(1, config.vocab_size, {b, t}, gen, torch::kInt64),
          at::randint(0, 2, {b}, gen, torch::kInt64)};
}

struct Reference {
  at::Tensor logits;
  std::vector<at::Tensor> grads;  // in named_parameters order
};

// The same model unpartitioned on the same batch.
Reference reference(const BertConfig& config, int rank) {
  auto model = zero3_parameters_make_model(config);
  const auto [ids, labels] = batch_of(config, rank);
  auto out = model->forward(ids, {}, {}, labels);
  out.loss.backward();
  Reference ref{out.logits.detach(), {}};
  for (auto& p : model->parameters()) ref.grads.push_back(p.grad().clone());
  return ref;
}

int64_t bytes_of(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

TEST(Zero3Parameters, PartitionHoldsHalfAndGatherRestoresTheValues) {
  const BertConfig config = zero3_config();
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    auto model = zero3_parameters_make_model(config);
    const FlatLayout layout = layout_of(*model);
    std::vector<at::Tensor> original;
    int64_t partitioned_bytes = 0, persistent_bytes = 0;
    for (auto& p : model->parameters()) {
      original.push_back(p.detach().clone());
      (p.numel() <= kThreshold ? persistent_bytes : partitioned_bytes) += bytes_of(p);
    }
    PartitionedParameters params(comm, stage3());
    params.partition(*model, layout);
    // Half of every partitioned parameter (each splits evenly here) plus the persistent ones, whole.
    EXPECT_EQ(params.held_parameter_bytes(), partitioned_bytes / 2 + persistent_bytes) << "rank " << r;
    const auto live = model->parameters();
    for (size_t i = 0; i < live.size(); ++i) {
      if (original[i].numel() <= kThreshold) {
        EXPECT_EQ(max_diff(live[i], original[i]), 0) << i;
      } else {
        EXPECT_EQ(live[i].numel(), 0) << "released parameter " << i << " still holds data";
      }
    }
    params.gather_all();
    for (size_t i = 0; i < live.size(); ++i) {
      ASSERT_EQ(live[i].sizes(), original[i].sizes()) << i;
      EXPECT_TRUE(live[i].equal(original[i])) << "rank " << r << " parameter " << i;
    }
    EXPECT_GT(params.stats().gathers, 0);
    {  // Held whole until release_all(): an evaluation in between leaves the model whole (to save it).
      torch::NoGradGuard no_grad;
      model->forward(batch_of(config, r).first);
    }
    for (size_t i = 0; i < live.size(); ++i) EXPECT_TRUE(live[i].equal(original[i])) << "after eval " << i;
    params.release_all();
    for (size_t i = 0; i < live.size(); ++i)
      if (original[i].numel() > kThreshold) {
        EXPECT_EQ(live[i].numel(), 0) << i;
      }
    // Unpartitioned: full values, no hooks, the plain forward.
    params.unpartition();
    for (size_t i = 0; i < live.size(); ++i) EXPECT_TRUE(live[i].equal(original[i])) << i;
    const auto [ids, labels] = batch_of(config, r);
    torch::NoGradGuard no_grad;
    auto plain = zero3_parameters_make_model(config);
    EXPECT_EQ(max_diff(model->forward(ids).logits, plain->forward(ids).logits), 0);
  }));
}

struct Variant {
  bool overlap;
  bool offload;
};

class Zero3Training : public ::testing::TestWithParam<Variant> {};

TEST_P(Zero3Training, LogitsAndGradientsEqualTheUnpartitionedModelTwice) {
  const Variant variant = GetParam();
  const BertConfig config = zero3_config();
  std::vector<Reference> refs{reference(config, 0), reference(config, 1)};
  std::vector<Zero3Stats> stats(2);
  int64_t full_bytes = 0;
  for (auto& p : zero3_parameters_make_model(config)->parameters()) full_bytes += bytes_of(p);
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    auto model = zero3_parameters_make_model(config);
    PartitionedParameters params(comm, stage3(variant.overlap, variant.offload));
    params.partition(*model, layout_of(*model));
    if (variant.offload) {
      for (size_t i = 0; i < params.owned_segments().size(); ++i) {
        EXPECT_TRUE(params.owned_piece(i).device().is_cpu());
      }
    }
    const auto [ids, labels] = batch_of(config, r);
    const auto live = model->parameters();
    for (int step = 0; step < 2; ++step) {
      for (auto& p : live) p.mutable_grad() = at::Tensor();
      auto out = model->forward(ids, {}, {}, labels);
      EXPECT_LT(max_diff(out.logits, refs[r].logits), 1e-6) << "step " << step;
      out.loss.backward();
      for (size_t i = 0; i < live.size(); ++i) {
        ASSERT_TRUE(live[i].grad().defined()) << "step " << step << " parameter " << i;
        EXPECT_LT(max_diff(live[i].grad(), refs[r].grads[i]), 1e-6) << "step " << step << " parameter " << i;
        // Nothing stays gathered once backward is over.
        if (live[i].grad().numel() > kThreshold) {
          EXPECT_EQ(live[i].numel(), 0) << "parameter " << i;
        }
      }
    }
    {
      torch::NoGradGuard no_grad;
      model->eval();
      EXPECT_LT(max_diff(model->forward(ids).logits, refs[r].logits), 1e-6);
      for (auto& p : live)
        if (p.grad().numel() > kThreshold) {
          EXPECT_EQ(p.numel(), 0);
        }
    }
    stats[r] = params.stats();
  }));
  for (int r = 0; r < 2; ++r) {
    // 2 training steps and one evaluation, 6 blocks each: forward + backward gathers, the embeddings' also.
    EXPECT_GE(stats[r].gathers, 6 * 2 * 2 + 6);
    EXPECT_EQ(stats[r].gathers, stats[r].releases);
    if (variant.overlap) {
      EXPECT_GT(stats[r].prefetches, 0);
    } else {
      EXPECT_EQ(stats[r].prefetches, 0);
    }
    EXPECT_GT(stats[r].peak_full_bytes, 0);
    // One layer at a time (two with the prefetch) of the 6 blocks.
    EXPECT_LT(stats[r].peak_full_bytes, variant.overlap ? full_bytes * 3 / 5 : full_bytes / 2)
        << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Zero3, Zero3Training,
                         ::testing::Values(Variant{false, false}, Variant{true, false}, Variant{false, true},
                                           Variant{true, true}),
                         [](const auto& info) {
                           return std::string(info.param.overlap ? "Overlap" : "NoOverlap") +
                                  (info.param.offload ? "OffloadCpu" : "OnDevice");
                         });

// A forward whose output is dropped leaves nothing gathered; two backwards before a step accumulate.
TEST(Zero3Parameters, ForwardWithoutBackwardAndGradientAccumulation) {
  const BertConfig config = zero3_config();
  std::vector<Reference> refs{reference(config, 0), reference(config, 1)};
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    auto model = zero3_parameters_make_model(config);
    PartitionedParameters params(comm, stage3(/*overlap=*/true));
    params.partition(*model, layout_of(*model));
    const auto [ids, labels] = batch_of(config, r);
    const auto live = model->parameters();
    auto released = [&] {
      for (size_t i = 0; i < live.size(); ++i) {
        if (refs[r].grads[i].numel() > kThreshold) {
          EXPECT_EQ(live[i].numel(), 0) << "parameter " << i;
        }
      }
    };
    (void)model->forward(ids, {}, {}, labels);
    released();
    EXPECT_EQ(params.stats().gathers, params.stats().releases);
    for (int micro = 0; micro < 2; ++micro) model->forward(ids, {}, {}, labels).loss.backward();
    released();
    for (size_t i = 0; i < live.size(); ++i)
      EXPECT_LT(max_diff(live[i].grad(), refs[r].grads[i] * 2.0), 1e-6) << "parameter " << i;
  }));
}

TEST(Zero3Parameters, UpdatedPiecesAreGatheredAndPersistentOnesBroadcast) {
  const BertConfig config = zero3_config(1);
  expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
    auto model = zero3_parameters_make_model(config);
    std::vector<at::Tensor> original;
    for (auto& p : model->parameters()) original.push_back(p.detach().clone());
    PartitionedParameters params(comm, stage3());
    params.partition(*model, layout_of(*model));
    // The optimizer's stand-in: +1 on everything this rank owns (rank 0 also owns the persistent ones).
    for (size_t i = 0; i < params.owned_segments().size(); ++i) {
      torch::NoGradGuard no_grad;
      params.owned_piece(i).add_(1.0);
    }
    const auto live = model->parameters();
    for (size_t i = 0; i < live.size(); ++i)
      if (original[i].numel() <= kThreshold) {
        EXPECT_EQ(max_diff(live[i], original[i]), r == 0 ? 1.0 : 0.0) << "before after_step " << i;
      }
    params.after_step();
    params.gather_all();
    for (size_t i = 0; i < live.size(); ++i)
      EXPECT_LT(max_diff(live[i], original[i] + 1.0), 1e-6) << "rank " << r << " parameter " << i;
    params.release_all();
  }));
}

TEST(Zero3Parameters, ModelWithoutLayerHooksIsRefused) {
  torch::nn::Linear linear(4, 4);
  const FlatLayout layout = layout_of(*linear);
  PartitionedParameters params(make_local_communicator(), stage3());
  expect_contains(error_text([&] { params.partition(*linear, layout); }),
                  {"ZeRO stage 3", "layer hooks", "BertForSequenceClassification", "torch::nn::LinearImpl",
                   "berth::LayeredModel", "Fix: use ZeRO stage 2"});
  ZeroOptions stage2 = stage3();
  stage2.stage = 2;
  auto model = zero3_parameters_make_model(zero3_config(1));
  PartitionedParameters wrong(make_local_communicator(), stage2);
  expect_contains(error_text([&] { wrong.partition(*model, layout_of(*model)); }),
                  {"stage 3", "the options say stage 2"});
}

TEST(Zero3Parameters, ForwardAfterDestroyingThePartitionIsAnError) {
  auto model = zero3_parameters_make_model(zero3_config(1));
  {
    PartitionedParameters params(make_local_communicator(), stage3());
    params.partition(*model, layout_of(*model));
  }
  const auto [ids, labels] = batch_of(zero3_config(1), 0);
  expect_contains(error_text([&] { model->forward(ids); }),
                  {"PartitionedParameters is gone", "unpartition()"});
}

// bert-mini (4 layers, hidden 256, 11.2M parameters) on 2 ranks, DeepSpeed's default knobs: what each rank
// holds between steps and the most full-parameter bytes at once during a training step.
TEST(Zero3Parameters, BertMiniMemoryOnTwoRanks) {
  BertConfig config = bert_preset("bert-mini");
  config.hidden_dropout_prob = 0;
  config.attention_probs_dropout_prob = 0;
  config.set_num_labels(2);
  int64_t full_bytes = 0;
  for (auto& p : zero3_parameters_make_model(config)->parameters()) full_bytes += bytes_of(p);
  for (bool overlap : {false, true}) {
    std::vector<int64_t> held(2);
    std::vector<Zero3Stats> stats(2);
    expect_ok(run_ranks(2, [&](int r, std::shared_ptr<Communicator> comm) {
      auto model = zero3_parameters_make_model(config);
      ZeroOptions options;
      options.stage = 3;
      options.overlap_comm = overlap;
      options.stage3_prefetch_bucket_size = 2000000;  // ~ two encoder layers' worth of elements ahead
      PartitionedParameters params(comm, options);
      params.partition(*model, layout_of(*model));
      held[r] = params.held_parameter_bytes();
      const auto [ids, labels] = batch_of(config, r, 2, 16);
      model->forward(ids, {}, {}, labels).loss.backward();
      stats[r] = params.stats();
    }));
    for (int r = 0; r < 2; ++r) {
      std::cout << "bert-mini ZeRO-3 rank " << r << (overlap ? " overlap_comm" : "") << ": model "
                << full_bytes << " B, held " << held[r] << " B, peak full " << stats[r].peak_full_bytes
                << " B, gathers " << stats[r].gathers << ", prefetches " << stats[r].prefetches << "\n";
      // Half of the partitioned 10.0M elements plus the persistent ones (the 256 x 256 attention weights are
      // below DeepSpeed's default threshold of 100000 elements).
      EXPECT_LT(held[r], full_bytes * 0.6);
      EXPECT_GT(held[r], full_bytes / 2);
      // The word embeddings (7.8M of 11.2M elements) are the largest block: the peak is at least theirs.
      EXPECT_LT(stats[r].peak_full_bytes, full_bytes);
    }
  }
}

}  // namespace
}  // namespace berth::dist
