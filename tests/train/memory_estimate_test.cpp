// Tests for the ZeRO memory estimate: the paper's per-stage accounting, padding, offload, BERT parameter
// counts against built models, and the estimate/measured table.
#include "berth/train/memory_estimate.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/bert_presets.h"
#include "support/test_support.h"

namespace berth::train {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;

TEST(MemoryEstimateTest, MixedPrecisionFollowsTheZeroPaper) {
  // The paper's example: 7.5B parameters on 64 ranks, mixed-precision Adam (K = 12): 120 GB at stage 0,
  // 31.4 GB at stage 1 (P_os), 16.6 GB at stage 2 (P_os+g), 1.9 GB at stage 3 (P_os+g+p).
  const int64_t psi = 7'500'000'000;
  const auto at = [&](int stage) {
    return estimate_zero_memory(psi, 64, stage, Precision::fp16, false, false, 0);
  };
  EXPECT_EQ(at(0).total(), 16 * psi);
  EXPECT_EQ(at(0).parameters, 2 * psi);
  EXPECT_EQ(at(0).gradients, 2 * psi);
  EXPECT_EQ(at(0).optimizer_states, 12 * psi);
  const int64_t shard = (psi + 63) / 64;
  EXPECT_EQ(at(1).total(), 4 * psi + 12 * shard);
  EXPECT_EQ(at(2).total(), 2 * psi + 14 * shard);
  EXPECT_EQ(at(3).total(), 16 * shard);
  EXPECT_NEAR(static_cast<double>(at(1).total()) / 1e9, 31.4, 0.05);
  EXPECT_NEAR(static_cast<double>(at(2).total()) / 1e9, 16.6, 0.05);
  EXPECT_NEAR(static_cast<double>(at(3).total()) / 1e9, 1.9, 0.05);
  // bf16 counts the same bytes as fp16.
  EXPECT_EQ(estimate_zero_memory(psi, 64, 2, Precision::bf16, false, false, 0).total(), at(2).total());
}

TEST(MemoryEstimateTest, Fp32AndPaddingToTheWorldSize) {
  // 1000 parameters on 3 ranks: berth pads the flat array to 1002, 334 per rank.
  const auto stage = [](int s) { return estimate_zero_memory(1000, 3, s, Precision::fp32, false, false, 0); };
  EXPECT_EQ(stage(0).parameters, 4000);
  EXPECT_EQ(stage(0).gradients, 4000);
  EXPECT_EQ(stage(0).optimizer_states, 8000);
  EXPECT_EQ(stage(1).optimizer_states, 334 * 8);
  EXPECT_EQ(stage(1).gradients, 4000);
  EXPECT_EQ(stage(2).gradients, 334 * 4);
  EXPECT_EQ(stage(2).parameters, 4000);
  EXPECT_EQ(stage(3).parameters, 334 * 4);
  EXPECT_EQ(stage(3).total(), 334 * 16);
  // One rank: every stage holds everything.
  EXPECT_EQ(estimate_zero_memory(1000, 1, 3, Precision::fp32, false, false, 0).total(), 16000);
  EXPECT_EQ(bytes_per_parameter(Precision::fp32).optimizer_states, 8);
  EXPECT_EQ(bytes_per_parameter(Precision::fp16).optimizer_states, 12);
}

TEST(MemoryEstimateTest, OffloadMovesStateToTheHostAndStage3ReportsTheWorkingSet) {
  const auto one = estimate_zero_memory(1000, 2, 1, Precision::fp16, /*offload_optimizer=*/true, false, 0);
  EXPECT_EQ(one.on_host, 500 * 12);
  EXPECT_EQ(one.on_device(), 2000 + 2000);
  EXPECT_EQ(one.working_set, 0);
  const auto three = estimate_zero_memory(1000, 2, 3, Precision::fp16, true, /*offload_param=*/true, 300);
  EXPECT_EQ(three.on_host, 500 * 12 + 500 * 2);
  EXPECT_EQ(three.on_device(), 500 * 2);  // only the gradient partition stays on the device
  EXPECT_EQ(three.working_set, 300 * 2);
  EXPECT_EQ(three.total(), 500 * 16);
}

TEST(MemoryEstimateTest, BadCombinationsAreErrors) {
  expect_contains(error_text([] { estimate_zero_memory(1000, 2, 4, Precision::fp32, false, false, 0); }),
                  {"ZeRO stage must be 0, 1, 2 or 3, found 4"});
  expect_contains(error_text([] { estimate_zero_memory(1000, 0, 1, Precision::fp32, false, false, 0); }),
                  {"world size must be >= 1, found 0"});
  expect_contains(error_text([] { estimate_zero_memory(1000, 2, 0, Precision::fp32, true, false, 0); }),
                  {"offloading the optimizer needs ZeRO stage 1, 2 or 3", "Fix:"});
  expect_contains(error_text([] { estimate_zero_memory(1000, 2, 2, Precision::fp32, true, true, 0); }),
                  {"offloading parameters needs ZeRO stage 3, found stage 2"});
  expect_contains(error_text([] { estimate_zero_memory(0, 2, 2, Precision::fp32, false, false, 0); }),
                  {"at least one parameter"});
}

int64_t built_parameter_count(const BertConfig& config) {
  BertInitOptions init;
  init.random = false;  // only shapes matter
  BertForSequenceClassification model(config, init);
  int64_t count = 0;
  for (const auto& p : model->parameters()) count += p.numel();
  return count;
}

TEST(MemoryEstimateTest, BertParameterCountMatchesTheBuiltModelForEveryPreset) {
  for (const std::string& name : bert_preset_names()) {
    BertConfig config = bert_preset(name);
    for (int64_t labels : {2, 5}) {
      config.set_num_labels(labels);
      EXPECT_EQ(count_bert_parameters(config, labels), built_parameter_count(config))
          << name << " " << labels;
    }
  }
  // bert-base-uncased with HF's 2-label head: 109,483,778 parameters (HF's num_parameters()).
  EXPECT_EQ(count_bert_parameters(bert_preset("bert-base"), 2), 109'483'778);
  // Its largest ZeRO-3 block is the embeddings: (30522 + 512 + 2) x 768 + 2 x 768.
  EXPECT_EQ(largest_bert_layer_parameters(bert_preset("bert-base"), 2), (30522 + 512 + 2) * 768 + 2 * 768);
}

TEST(MemoryEstimateTest, TableShowsEstimateBesideMeasured) {
  const auto estimate = estimate_zero_memory(1'000'000, 2, 1, Precision::fp32, false, false, 0);
  MemoryFootprint held;
  held.parameters = 4'000'000;
  held.gradients = 4'000'000;
  held.optimizer_states = 4'000'000;
  const std::string table = format_memory_table(estimate, held);
  expect_contains(table, {"estimate", "measured", "parameters", "4.00 MB (4000000 B)", "optimizer states",
                          "4.00 MB (4000000 B)", "total", "12.00 MB (12000000 B)", "on host (offload)"});
  const std::string alone = format_memory_table(estimate, std::nullopt);
  EXPECT_FALSE(berth::testing::contains(alone, "measured"));
  expect_contains(alone, {"12.00 MB (12000000 B)"});
  const auto json = nlohmann::json::parse(memory_estimate_json(estimate));
  EXPECT_EQ(json.at("total"), 12'000'000);
  EXPECT_EQ(json.at("optimizer_states"), 4'000'000);
  EXPECT_EQ(json.at("precision"), "fp32");
  EXPECT_EQ(json.at("stage"), 1);
}

}  // namespace
}  // namespace berth::train
