// Every "auto" of a DeepSpeed config filled, and every contradicting explicit value refused, as transformers
// 5.24's HfTrainerDeepSpeedConfig does (goldens from tests/goldens/deepspeed_fill_goldens.py): berth's
// resolve_deepspeed_config, fill_hidden_size_auto and finalize_deepspeed_config against HF's filled config
// over three schedulers x ZeRO stages 1-3 x warmup none / steps / ratio x two argument sets x 1 and 2 ranks.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "berth/train/deepspeed_config.h"
#include "support/test_support.h"

namespace berth::train {
namespace {

using Json = nlohmann::json;
using berth::testing::error_text;
using berth::testing::expect_contains;

Json deepspeed_fill_cases() {
  std::ifstream in(berth::testing::golden_dir() + "/deepspeed_fill/cases.json");
  if (!in.good()) return Json();
  return Json::parse(in);
}

// The case's TrainingArguments as HF set them (warmup_steps below 1 is HF 5's ratio, berth's warmup_ratio).
TrainingArguments deepspeed_fill_arguments(const Json& values) {
  TrainingArguments args;
  args.per_device_train_batch_size = values.value("per_device_train_batch_size", 8);
  args.gradient_accumulation_steps = values.value("gradient_accumulation_steps", 1);
  args.learning_rate = values.value("learning_rate", 5e-5);
  args.adam_beta1 = values.value("adam_beta1", 0.9);
  args.adam_beta2 = values.value("adam_beta2", 0.999);
  args.adam_epsilon = values.value("adam_epsilon", 1e-8);
  args.weight_decay = values.value("weight_decay", 0.0);
  args.max_grad_norm = values.value("max_grad_norm", 1.0);
  args.bf16 = values.value("bf16", false);
  const double warmup = values.value("warmup_steps", 0.0);
  if (warmup < 1)
    args.warmup_ratio = warmup;
  else
    args.warmup_steps = static_cast<int64_t>(warmup);
  return args;
}

// berth's config after the three steps the Trainer runs (resolve at start-up; the hidden size once the
// model's config is read; finalize once the run's steps are known).
DeepSpeedConfig deepspeed_fill_berth(const Json& c, const TrainingArguments& args) {
  DeepSpeedConfig config = resolve_deepspeed_config(c.at("deepspeed").dump(), args, c.at("world_size"));
  fill_hidden_size_auto(config, c.at("hidden_size").get<int64_t>());
  finalize_deepspeed_config(config, args, c.at("num_training_steps"));
  return config;
}

void expect_filled_as_hf(const DeepSpeedConfig& config, const Json& hf) {
  EXPECT_EQ(config.train_batch_size, hf.at("train_batch_size").get<int64_t>());
  EXPECT_EQ(config.train_micro_batch_size_per_gpu, hf.at("train_micro_batch_size_per_gpu").get<int64_t>());
  EXPECT_EQ(config.gradient_accumulation_steps, hf.at("gradient_accumulation_steps").get<int64_t>());
  EXPECT_EQ(config.gradient_clipping, hf.at("gradient_clipping").get<double>());
  const bool bf16 = hf.at("bf16").at("enabled").get<bool>();
  const bool fp16 = hf.at("fp16").at("enabled").get<bool>();
  EXPECT_EQ(config.precision.precision, fp16 ? Precision::fp16 : bf16 ? Precision::bf16 : Precision::fp32);
  const Json& optimizer = hf.at("optimizer").at("params");
  ASSERT_TRUE(config.optimizer.has_value());
  EXPECT_EQ(config.optimizer->lr, optimizer.at("lr").get<double>());
  EXPECT_EQ(config.optimizer->beta1, optimizer.at("betas").at(0).get<double>());
  EXPECT_EQ(config.optimizer->beta2, optimizer.at("betas").at(1).get<double>());
  EXPECT_EQ(config.optimizer->eps, optimizer.at("eps").get<double>());
  EXPECT_EQ(config.optimizer->weight_decay, optimizer.at("weight_decay").get<double>());
  const Json& scheduler = hf.at("scheduler").at("params");
  ASSERT_TRUE(config.scheduler.has_value());
  const optim::SchedulerOptions& options = config.scheduler->options;
  EXPECT_EQ(options.warmup_steps, scheduler.at("warmup_num_steps").get<int64_t>());
  if (scheduler.contains("total_num_steps"))
    EXPECT_EQ(options.total_steps, scheduler.at("total_num_steps").get<int64_t>());
  if (scheduler.contains("warmup_max_lr"))
    EXPECT_EQ(options.warmup_max_lr, scheduler.at("warmup_max_lr").get<double>());
  if (scheduler.contains("warmup_min_lr"))
    EXPECT_EQ(options.warmup_min_lr, scheduler.at("warmup_min_lr").get<double>());
  const Json& zero = hf.at("zero_optimization");
  EXPECT_EQ(config.zero.stage, zero.at("stage").get<int>());
  EXPECT_EQ(config.zero.reduce_bucket_size, zero.at("reduce_bucket_size").get<int64_t>());
  if (config.zero.stage == 3) {  // below it HF leaves them "auto": nothing reads them
    EXPECT_EQ(config.zero.stage3_prefetch_bucket_size, zero.at("stage3_prefetch_bucket_size").get<int64_t>());
    EXPECT_EQ(config.zero.stage3_param_persistence_threshold,
              zero.at("stage3_param_persistence_threshold").get<int64_t>());
  }
}

// HF's line "- ds KEY=VALUE vs hf ARGUMENT=VALUE": berth's error must name the same key and argument.
void expect_mismatch_named(const std::string& error, const std::string& hf_line) {
  const size_t key_end = hf_line.find('=');
  const size_t argument_begin = hf_line.find(" vs hf ") + 7;
  const std::string key = hf_line.substr(5, key_end - 5);
  std::string argument = hf_line.substr(argument_begin, hf_line.find('=', argument_begin) - argument_begin);
  argument = argument.substr(0, argument.find_first_of(" +|"));  // "adam_beta1+adam_beta2": adam_beta1
  expect_contains(error, {"- " + key, " vs " + argument});
}

TEST(DeepSpeedFillGolden, EveryAutoKeyIsFilledAndEveryMismatchRefusedAsHfDoes) {
  const Json cases = deepspeed_fill_cases();
  ASSERT_TRUE(cases.is_array()) << "missing golden deepspeed_fill/cases.json: build the berth_goldens target";
  int filled = 0, refused = 0, clamped = 0;
  for (const Json& c : cases) {
    SCOPED_TRACE(c.at("name").get<std::string>() + ": " + c.at("deepspeed").dump());
    const TrainingArguments args = deepspeed_fill_arguments(c.at("args"));
    const Json& mismatches = c.at("mismatches");
    if (!mismatches.empty()) {
      const std::string error = error_text([&] { deepspeed_fill_berth(c, args); });
      expect_contains(error, {"mismatch TrainingArguments values", "set these DeepSpeed config values to"});
      for (const Json& line : mismatches) expect_mismatch_named(error, line.get<std::string>());
      ++refused;
      continue;
    }
    expect_filled_as_hf(deepspeed_fill_berth(c, args), c.at("filled"));
    if (args.resolved_warmup_steps(c.at("num_training_steps")) == 0) ++clamped;
    ++filled;
  }
  EXPECT_EQ(filled, 109);
  EXPECT_EQ(refused, 13);
  EXPECT_GE(clamped, 36);  // every no-warmup case warms up over HF's 1 step
}

// The run the issue reports: MedicalGPT's ZeRO-3 config (WarmupDecayLR, every param "auto") with no warmup
// trains, warming up over one step as HF fills it, and the scheduler DeepSpeed would build accepts it.
TEST(DeepSpeedFillGolden, AutoWarmupWithoutWarmupIsOneStep) {
  const std::string config_path =
      std::string(BERTH_SOURCE_DIR) +
      "/tests/train/fixtures/published/medicalgpt_deepspeed_zero_stage3_config.json";
  TrainingArguments args;
  DeepSpeedConfig config = resolve_deepspeed_config(config_path, args, 2);
  finalize_deepspeed_config(config, args, 30);
  ASSERT_TRUE(config.scheduler.has_value());
  EXPECT_EQ(config.scheduler->options.warmup_steps, 1);
  EXPECT_EQ(config.scheduler->options.total_steps, 30);
  EXPECT_NO_THROW(optim::LrScheduler(args.learning_rate, config.scheduler->options));
}

}  // namespace
}  // namespace berth::train
