// DeepSpeed's hidden-size "auto" values (reduce_bucket_size, stage3_prefetch_bucket_size,
// stage3_param_persistence_threshold) filled from a model's config.json as HF's HfTrainerDeepSpeedConfig
// fills them (goldens from tests/goldens/deepspeed_auto_goldens.py), through resolve_run_plan as berth
// train uses it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "berth/model/pretrained_config.h"
#include "berth/train/deepspeed_config.h"
#include "berth/train/run_plan.h"
#include "support/test_support.h"

namespace berth::train {
namespace {

using Json = nlohmann::json;
using berth::testing::error_text;
using berth::testing::expect_contains;

Json deepspeed_auto_cases() {
  std::ifstream in(berth::testing::golden_dir() + "/deepspeed_auto/cases.json");
  if (!in.good()) return Json();
  return Json::parse(in);
}

// HF's value for `key`, or berth's ZeroOptions default where HF leaves "auto" (below stage 3 nothing reads
// it).
int64_t deepspeed_auto_expected(const Json& zero, const char* key, int64_t untouched) {
  const Json& value = zero.at(key);
  return value.is_string() ? untouched : value.get<int64_t>();
}

TEST(DeepSpeedAutoGolden, HiddenSizeKeysAreFilledAsHfFillsThem) {
  const Json cases = deepspeed_auto_cases();
  ASSERT_TRUE(cases.is_array()) << "missing golden deepspeed_auto/cases.json: build the berth_goldens target";
  const dist::ZeroOptions defaults;
  int filled = 0;
  for (const Json& c : cases) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const PretrainedConfig model =
        PretrainedConfig::from_json_text(c.at("model_config").dump(), "config.json");
    TrainingArguments args;
    args.deepspeed = c.at("deepspeed").dump();  // inline JSON, as HF's dict
    const std::optional<int64_t> hidden_size = model_hidden_size(model);
    if (c.at("error").get<bool>()) {
      EXPECT_FALSE(hidden_size.has_value());
      expect_contains(
          error_text([&] { resolve_run_plan(args, local_process_context(args), hidden_size); }),
          {"its config has neither `hidden_size` nor `hidden_sizes`", "zero_optimization.reduce_bucket_size",
           "zero_optimization.stage3_prefetch_bucket_size", "Fix: replace \"auto\""});
      continue;
    }
    DeepSpeedConfig config = resolve_deepspeed_config(*args.deepspeed, args, 1);
    EXPECT_FALSE(config.hidden_size_auto_keys.empty());
    fill_hidden_size_auto(config, hidden_size);
    const Json& hf = c.at("zero_optimization");
    EXPECT_EQ(config.zero.reduce_bucket_size,
              deepspeed_auto_expected(hf, "reduce_bucket_size", defaults.reduce_bucket_size));
    if (hf.contains("stage3_prefetch_bucket_size")) {
      EXPECT_EQ(
          config.zero.stage3_prefetch_bucket_size,
          deepspeed_auto_expected(hf, "stage3_prefetch_bucket_size", defaults.stage3_prefetch_bucket_size));
      EXPECT_EQ(config.zero.stage3_param_persistence_threshold,
                deepspeed_auto_expected(hf, "stage3_param_persistence_threshold",
                                        defaults.stage3_param_persistence_threshold));
    }
    ++filled;
  }
  EXPECT_EQ(filled, 9);
}

TEST(DeepSpeedAutoGolden, RunPlanWithoutAHiddenSizeNamesTheKeys) {
  TrainingArguments args;
  args.deepspeed = R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}})";
  expect_contains(error_text([&] { resolve_run_plan(args, local_process_context(args)); }),
                  {"the \"auto\" values of zero_optimization.reduce_bucket_size", "Fix: replace \"auto\""});
  // A whole number is taken as written; "auto" elsewhere in the block is still a type error.
  args.deepspeed = R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": 5e5}})";
  EXPECT_NO_THROW(resolve_run_plan(args, local_process_context(args)));
  args.deepspeed = R"({"zero_optimization": {"stage": 2, "allgather_bucket_size": "auto"}})";
  expect_contains(error_text([&] { resolve_run_plan(args, local_process_context(args)); }),
                  {"\"zero_optimization.allgather_bucket_size\" must be a whole number", "found \"auto\""});
}

}  // namespace
}  // namespace berth::train
