// `berth estimate-memory` as users run it: the table and JSON numbers equal estimate_zero_memory's, and bad
// stage/world/precision/offload combinations exit 2 with the fix.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "berth/model/bert_presets.h"
#include "berth/train/memory_estimate.h"
#include "support/cli_runner.h"
#include "support/test_support.h"

namespace {

using berth::testing::run_cli;
using berth::train::Precision;

TEST(EstimateMemoryCli, JsonEqualsTheLibraryEstimate) {
  const auto result = run_cli(
      "estimate-memory --model-preset bert-base --world-size 4 --stage 2 --precision fp16 "
      "--offload-optimizer --json",
      /*merge_stderr=*/false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto json = nlohmann::json::parse(result.output);
  const auto config = berth::bert_preset("bert-base");
  const int64_t params = berth::train::count_bert_parameters(config, 2);
  const auto expected = berth::train::estimate_zero_memory(
      params, 4, 2, Precision::fp16, true, false, berth::train::largest_bert_layer_parameters(config, 2));
  EXPECT_EQ(json.at("num_params"), 109'483'778);
  EXPECT_EQ(json.at("parameters"), expected.parameters);
  EXPECT_EQ(json.at("gradients"), expected.gradients);
  EXPECT_EQ(json.at("optimizer_states"), expected.optimizer_states);
  EXPECT_EQ(json.at("total"), expected.total());
  EXPECT_EQ(json.at("on_host"), expected.on_host);
  EXPECT_EQ(json.at("precision"), "fp16");
  EXPECT_EQ(json.at("stage"), 2);
  // 2 bytes of fp16 parameters whole, 2 of gradients and 12 of optimizer state over 4 ranks.
  const int64_t shard = (109'483'778 + 3) / 4;
  EXPECT_EQ(json.at("total"), 2 * 109'483'778 + 14 * shard);
}

TEST(EstimateMemoryCli, TablePrintsEveryKindInMbWithExactBytes) {
  const auto result = run_cli(
      "estimate-memory --model-preset bert-tiny --num-labels 3 --world-size 2 --stage 3 --offload-param "
      "--offload-optimizer");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto config = berth::bert_preset("bert-tiny");
  const int64_t params = berth::train::count_bert_parameters(config, 3);
  const auto expected = berth::train::estimate_zero_memory(
      params, 2, 3, Precision::fp32, true, true, berth::train::largest_bert_layer_parameters(config, 3));
  berth::testing::expect_contains(
      result.output,
      {"bert-tiny (BertForSequenceClassification): " + std::to_string(params) + " parameters",
       "ZeRO stage 3, 2 rank(s), fp32", "parameters", "gradients", "optimizer states", "total",
       "on host (offload)", "working set (stage 3)", "(" + std::to_string(expected.parameters) + " B)",
       "(" + std::to_string(expected.optimizer_states) + " B)",
       "(" + std::to_string(expected.total()) + " B)", "(" + std::to_string(expected.on_host) + " B)"});
}

TEST(EstimateMemoryCli, ModelDirectoryReadsItsConfigAndLabels) {
  berth::testing::TempDir dir;
  auto config = berth::bert_preset("bert-mini");
  config.set_num_labels(4);
  config.save(dir.file("config.json"));
  const auto result = run_cli("estimate-memory --model " + dir.path().string() + " --json", false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(nlohmann::json::parse(result.output).at("num_params"),
            berth::train::count_bert_parameters(config, 4));
}

TEST(EstimateMemoryCli, BadCombinationsExitTwoWithTheFix) {
  const auto expect_error = [](const std::string& args, const std::vector<std::string>& parts) {
    const auto result = run_cli("estimate-memory " + args);
    EXPECT_EQ(result.exit_code, 2) << args << "\n" << result.output;
    berth::testing::expect_contains(result.output, parts);
  };
  expect_error("--model-preset bert-tiny --stage 5", {"ZeRO stage must be 0, 1, 2 or 3, found 5"});
  expect_error("--model-preset bert-tiny --world-size 0", {"world size must be >= 1, found 0"});
  expect_error("--model-preset bert-tiny --precision fp8",
               {"--precision must be fp32, fp16 or bf16", "'fp8'"});
  expect_error("--model-preset bert-tiny --stage 2 --offload-param",
               {"offloading parameters needs ZeRO stage 3"});
  expect_error("--model-preset bert-tiny --offload-optimizer",
               {"offloading the optimizer needs ZeRO stage 1"});
  expect_error("--world-size 2", {"needs a model: --model DIR or --model-preset NAME"});
  expect_error("--model-preset bert-huge", {"bert-huge"});
}

}  // namespace
