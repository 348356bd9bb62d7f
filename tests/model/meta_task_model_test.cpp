// Meta-device task models: the parameter count of full-size models of every family (Llama 3 8B, Mistral 7B,
// XLM-R ...) equals what transformers builds on the meta device (tests/goldens/parameter_count_goldens.py),
// without memory for their values; and `berth estimate-memory --model DIR` reports that count.
#include "berth/model/meta_task_model.h"
#include "berth/model/auto_model.h"
#include "berth/model/bert_presets.h"
#include "berth/model/model_presets.h"
#include "berth/train/memory_estimate.h"

#include "support/cli_runner.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace {

std::string meta_counts_dir() { return berth::testing::golden_dir() + "/parameter_counts"; }

std::vector<std::string> meta_count_cases() {
  std::ifstream in(meta_counts_dir() + "/cases.txt");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) names.push_back(line);
  return names;
}

nlohmann::json meta_count_expected(const std::string& name) {
  std::ifstream in(meta_counts_dir() + "/" + name + "/expected.json");
  return nlohmann::json::parse(in);
}

TEST(MetaTaskModel, FullSizeModelsCountAsTransformersBuildsThem) {
  const auto names = meta_count_cases();
  ASSERT_GE(names.size(), 9u);
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const auto expected = meta_count_expected(name);
    const auto config = berth::PretrainedConfig::load(meta_counts_dir() + "/" + name + "/config.json");
    const auto model = berth::build_meta_task_model(config, berth::parse_task(expected.at("task")));
    EXPECT_EQ(model->info().architecture, expected.at("architecture").get<std::string>());
    for (const auto& item : model->module().named_parameters())
      ASSERT_EQ(item.value().device().type(), c10::kMeta) << item.key();
    const auto counts = berth::count_parameters(*model);
    EXPECT_EQ(counts.total, expected.at("num_parameters").get<int64_t>());
    EXPECT_GT(counts.largest_block, 0);
    EXPECT_LT(counts.largest_block, counts.total);
  }
}

TEST(MetaTaskModel, CountsEqualTheBuiltModelAndBertsClosedForm) {
  // A real (allocated) model and its meta twin hold the same names and shapes.
  auto config = berth::model_preset("llama-tiny", 300);
  const auto real = berth::build_task_model(config, berth::ModelTask::CausalLM);
  const auto meta = berth::build_meta_task_model(config, berth::ModelTask::CausalLM);
  const auto real_params = real->module().named_parameters();
  const auto meta_params = meta->module().named_parameters();
  ASSERT_EQ(real_params.size(), meta_params.size());
  for (size_t i = 0; i < real_params.size(); ++i) {
    EXPECT_EQ(real_params[i].key(), meta_params[i].key());
    EXPECT_EQ(real_params[i].value().sizes(), meta_params[i].value().sizes()) << real_params[i].key();
  }
  EXPECT_EQ(berth::count_parameters(*meta).largest_block, berth::largest_block_parameters(*real));

  const auto bert = berth::bert_preset("bert-small");
  auto bert_config = berth::model_preset("bert-small", 30522);
  bert_config.set_num_labels(3);
  const auto counts = berth::count_parameters(
      *berth::build_meta_task_model(bert_config, berth::ModelTask::SequenceClassification));
  EXPECT_EQ(counts.total, berth::train::count_bert_parameters(bert, 3));
  EXPECT_EQ(counts.largest_block, berth::train::largest_bert_layer_parameters(bert, 3));
}

TEST(MetaTaskModel, EstimateMemoryReadsAnyFamilysConfig) {
  const std::string name = "llama3_8b_causal_lm";
  const auto result = berth::testing::run_cli(
      "estimate-memory --model " + meta_counts_dir() + "/" + name + " --world-size 8 --stage 3 --json",
      /*merge_stderr=*/false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto json = nlohmann::json::parse(result.output);
  const int64_t params = meta_count_expected(name).at("num_parameters");
  EXPECT_EQ(json.at("num_params"), params);
  EXPECT_EQ(json.at("parameters"), (params + 7) / 8 * 4);  // fp32, a 1/8 shard of the flat array
  const auto table = berth::testing::run_cli("estimate-memory --model-preset gpt2-tiny --task causal-lm");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  berth::testing::expect_contains(table.output, {"gpt2-tiny (GPT2LMHeadModel): "});
}

}  // namespace
