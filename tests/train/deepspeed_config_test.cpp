// Tests for DeepSpeed JSON configs: the seed's config, "auto" filling, the batch rule, the mismatch report,
// the warnings for arguments a config overrides, unsupported features, and HF's fsdp option string.
#include "berth/train/deepspeed_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "berth/dist/zero_options.h"
#include "support/test_support.h"

namespace berth::train {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;

std::string deepspeed_config_fixture(const std::string& name) {
  return berth::testing::source_dir() + "/tests/train/fixtures/" + name;
}

TrainingArguments fp16_args() {
  TrainingArguments args;
  args.fp16 = true;
  return args;
}

TEST(DeepSpeedConfigTest, SeedConfigParsesVerbatim) {
  std::ifstream in(deepspeed_config_fixture("seed_deepspeed_config.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(text.find("2e8"), std::string::npos);  // the fixture is the seed's text, 2e8 and all
  std::vector<std::string> warnings;
  const DeepSpeedConfig config = parse_deepspeed_config(text, "seed.json", &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(config.zero.stage, 1);
  EXPECT_EQ(config.zero.offload_optimizer.device, "cpu");
  EXPECT_TRUE(config.zero.offload_optimizer.enabled());
  EXPECT_TRUE(config.zero.offload_optimizer.pin_memory);
  EXPECT_FALSE(config.zero.offload_param.enabled());
  EXPECT_EQ(config.zero.allgather_bucket_size, 200000000);
  EXPECT_EQ(config.zero.reduce_bucket_size, 200000000);
  EXPECT_TRUE(config.zero.allgather_partitions);
  EXPECT_TRUE(config.zero.overlap_comm);
  EXPECT_TRUE(config.zero.reduce_scatter);
  EXPECT_TRUE(config.zero.contiguous_gradients);
  EXPECT_EQ(config.precision.precision, Precision::fp16);
  EXPECT_FALSE(config.optimizer.has_value());
  EXPECT_FALSE(config.scheduler.has_value());
  EXPECT_EQ(config.steps_per_print, 10);   // DeepSpeed's default
  EXPECT_EQ(config.gradient_clipping, 0);  // absent: DeepSpeed does not clip
}

TEST(DeepSpeedConfigTest, SeedConfigEnablesFp16AndConflictsWithBf16) {
  // --fp16 given: batch sizes come from the arguments (absent keys are filled as "auto").
  const DeepSpeedConfig config = resolve_deepspeed_config(
      deepspeed_config_fixture("seed_deepspeed_config.json"), fp16_args(), /*world_size=*/2);
  EXPECT_EQ(config.train_micro_batch_size_per_gpu, 8);
  EXPECT_EQ(config.gradient_accumulation_steps, 1);
  EXPECT_EQ(config.train_batch_size, 16);
  EXPECT_EQ(config.precision.precision, Precision::fp16);
  EXPECT_EQ(config.zero.stage, 1);
  // Without --fp16 the config's explicit "enabled": true turns fp16 on (berth's one departure from HF's
  // fill_match, so that the config users write decides the precision)...
  EXPECT_EQ(
      resolve_deepspeed_config(deepspeed_config_fixture("seed_deepspeed_config.json"), TrainingArguments{}, 2)
          .precision.precision,
      Precision::fp16);
  // ...and a config that contradicts a precision flag lists it.
  TrainingArguments bf16;
  bf16.bf16 = true;
  const std::string error = error_text(
      [&] { resolve_deepspeed_config(deepspeed_config_fixture("seed_deepspeed_config.json"), bf16, 2); });
  expect_contains(error, {"seed_deepspeed_config.json", "mismatch TrainingArguments values",
                          "fp16.enabled=true vs bf16=true", "--bf16", "\"fp16\": {\"enabled\": false}"});
  TrainingArguments fp16 = fp16_args();
  const std::string disabled =
      error_text([&] { resolve_deepspeed_config("{\"fp16\": {\"enabled\": false}}", fp16, 1); });
  expect_contains(disabled, {"fp16.enabled=false vs fp16=true", "drop --fp16"});
}

TEST(DeepSpeedConfigTest, AutoValuesAreFilledFromTrainingArguments) {
  TrainingArguments args;
  args.per_device_train_batch_size = 4;
  args.gradient_accumulation_steps = 3;
  args.learning_rate = 2e-5;
  args.adam_beta1 = 0.8;
  args.adam_beta2 = 0.99;
  args.adam_epsilon = 1e-6;
  args.weight_decay = 0.01;
  args.max_grad_norm = 0.5;
  args.bf16 = true;
  const std::string text = R"({
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto", "steps_per_print": 2e3,
    "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"},
    "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                  "warmup_num_steps": "auto", "total_num_steps": "auto", "warmup_type": "linear"}},
    "zero_optimization": {"stage": 2}})";
  const DeepSpeedConfig config = resolve_deepspeed_config(text, args, 2);
  EXPECT_EQ(config.train_micro_batch_size_per_gpu, 4);
  EXPECT_EQ(config.gradient_accumulation_steps, 3);
  EXPECT_EQ(config.train_batch_size, 24);
  EXPECT_EQ(config.gradient_clipping, 0.5);
  EXPECT_EQ(config.steps_per_print, 2000);
  EXPECT_EQ(config.precision.precision, Precision::bf16);
  ASSERT_TRUE(config.optimizer.has_value());
  EXPECT_EQ(config.optimizer->type, "AdamW");
  EXPECT_EQ(config.optimizer->lr, 2e-5);
  EXPECT_EQ(config.optimizer->beta1, 0.8);
  EXPECT_EQ(config.optimizer->beta2, 0.99);
  EXPECT_EQ(config.optimizer->eps, 1e-6);
  EXPECT_EQ(config.optimizer->weight_decay, 0.01);
  ASSERT_TRUE(config.scheduler.has_value());
  EXPECT_EQ(config.scheduler->options.type, optim::SchedulerType::WarmupDecayLR);
  EXPECT_EQ(config.scheduler->options.warmup_max_lr, 2e-5);
  EXPECT_EQ(config.scheduler->options.warmup_min_lr, 0.0);
  EXPECT_EQ(config.scheduler->options.warmup_type, "linear");
  EXPECT_TRUE(config.scheduler->total_num_steps_pending);
  EXPECT_TRUE(config.scheduler->warmup_num_steps_pending);
  EXPECT_EQ(config.zero.stage, 2);

  // At train start the run's totals fill the pending step counts (warmup_ratio 0.1 of 200 steps: 20).
  DeepSpeedConfig finalized = config;
  args.warmup_ratio = 0.1;
  finalize_deepspeed_config(finalized, args, 200);
  EXPECT_EQ(finalized.scheduler->options.total_steps, 200);
  EXPECT_EQ(finalized.scheduler->options.warmup_steps, 20);
  EXPECT_FALSE(finalized.scheduler->total_num_steps_pending);
  EXPECT_FALSE(finalized.scheduler->warmup_num_steps_pending);
}

TEST(DeepSpeedConfigTest, ExplicitTotalStepsThatDisagreeWithTheRunAreReportedAtFinalize) {
  TrainingArguments args;
  args.warmup_steps = 10;  // as the config's warmup_num_steps: HF compares both at train start
  DeepSpeedConfig config = resolve_deepspeed_config(
      R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 500, "warmup_num_steps": 10}}})",
      args, 1);
  EXPECT_FALSE(config.scheduler->total_num_steps_pending);
  EXPECT_EQ(config.scheduler->options.warmup_steps, 10);
  expect_contains(error_text([&] { finalize_deepspeed_config(config, args, 300); }),
                  {"scheduler.params.total_num_steps=500 vs num_training_steps (calculated)=300"});
  finalize_deepspeed_config(config, args, 500);
  EXPECT_EQ(config.scheduler->options.total_steps, 500);
}

TEST(DeepSpeedConfigTest, TwoBatchSizesDetermineTheThird) {
  TrainingArguments args;
  args.per_device_train_batch_size = 4;
  args.gradient_accumulation_steps = 2;
  // train 16 and micro 4 on 2 ranks: accumulation 2, which the arguments agree with.
  auto config =
      resolve_deepspeed_config(R"({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4})", args, 2);
  EXPECT_EQ(config.gradient_accumulation_steps, 2);
  config = resolve_deepspeed_config(R"({"train_batch_size": 16, "gradient_accumulation_steps": 2})", args, 2);
  EXPECT_EQ(config.train_micro_batch_size_per_gpu, 4);
  config = resolve_deepspeed_config(
      R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2})", args, 2);
  EXPECT_EQ(config.train_batch_size, 16);
  // A derived value that disagrees with the arguments is a mismatch naming the derivation's result.
  expect_contains(
      error_text([&] {
        resolve_deepspeed_config(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4})", args, 2);
      }),
      {"gradient_accumulation_steps=4 vs gradient_accumulation_steps=2", "train_batch_size=32 vs"});
  // Not a whole number of accumulation steps: the arithmetic is shown.
  expect_contains(error_text([&] {
                    resolve_deepspeed_config(
                        R"({"train_batch_size": 20, "train_micro_batch_size_per_gpu": 4})", args, 2);
                  }),
                  {"20 / (4 x 2) is not a whole number", "multiple of 8"});
}

TEST(DeepSpeedConfigTest, ThreeBatchSizesMustSatisfyDeepSpeedsRule) {
  TrainingArguments args;
  expect_contains(
      error_text([&] {
        resolve_deepspeed_config(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8,
                                                 "gradient_accumulation_steps": 1})",
                                 args, 2);
      }),
      {"train_batch_size must equal train_micro_batch_size_per_gpu x gradient_accumulation_steps x "
       "world size",
       "32 != 8 x 1 x 2 = 16"});
  EXPECT_EQ(resolve_deepspeed_config(R"({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8,
                                         "gradient_accumulation_steps": 1})",
                                     args, 2)
                .train_batch_size,
            16);
}

TEST(DeepSpeedConfigTest, EveryConflictIsListedInOneError) {
  TrainingArguments args;  // lr 5e-5, betas 0.9/0.999, eps 1e-8, wd 0, max_grad_norm 1, batch 8
  const std::string text = R"({"train_micro_batch_size_per_gpu": 16, "gradient_clipping": 0.3,
    "bf16": {"enabled": true},
    "optimizer": {"type": "Adam", "params": {"lr": 1e-4, "betas": [0.8, 0.999], "eps": 1e-8, "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 3e-4}}})";
  args.fp16 = true;  // the config's bf16 contradicts it
  const std::string error = error_text([&] { resolve_deepspeed_config(text, args, 1); });
  expect_contains(
      error, {"Please correct the following DeepSpeed config values that mismatch TrainingArguments values",
              "train_micro_batch_size_per_gpu=16 vs per_device_train_batch_size=8",
              "--per_device_train_batch_size 16", "gradient_clipping=0.3 vs max_grad_norm=1",
              "bf16.enabled=true vs fp16=true", "optimizer.params.lr=0.0001 vs learning_rate=5e-05",
              "optimizer.params.betas[0]=0.8 vs adam_beta1=0.9",
              "optimizer.params.weight_decay=0.1 vs weight_decay=0",
              "scheduler.params.warmup_max_lr=0.0003 vs learning_rate=5e-05"});
  // Values that agree are not listed.
  EXPECT_FALSE(berth::testing::contains(error, "optimizer.params.eps"));
  EXPECT_FALSE(berth::testing::contains(error, "betas[1]"));
}

TEST(DeepSpeedConfigTest, UnknownKeysAreOneWarning) {
  std::vector<std::string> warnings;
  const auto config = parse_deepspeed_config(
      R"({"wall_clock_breakdown": false, "zero_allow_untested_optimizer": true,
          "zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1e9, "sub_group_size": 1e9},
          "fp16": {"enabled": false, "auto_cast": false}})",
      "ds.json", &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  expect_contains(warnings[0],
                  {"ds.json: ignored 5 DeepSpeed config key(s) berth does not read",
                   "fp16.auto_cast, wall_clock_breakdown, zero_allow_untested_optimizer, "
                   "zero_optimization.stage3_max_live_parameters, zero_optimization.sub_group_size"});
  EXPECT_EQ(config.unknown_keys.size(), 5u);
  EXPECT_EQ(config.zero.stage, 3);
}

TEST(DeepSpeedConfigTest, ZeroBlockRules) {
  const auto parse = [](const std::string& zero) {
    return parse_deepspeed_config(R"({"zero_optimization": )" + zero + "}", "ds.json");
  };
  expect_contains(error_text([&] { parse(R"({"stage": 4})"); }),
                  {"\"zero_optimization.stage\" must be 0, 1, 2 or 3, found 4"});
  expect_contains(error_text([&] { parse(R"({"stage": 2, "offload_optimizer": {"device": "nvme"}})"); }),
                  {"\"nvme\", which berth does not support", "Fix: \"device\": \"cpu\""});
  expect_contains(error_text([&] { parse(R"({"stage": 2, "offload_param": {"device": "cpu"}})"); }),
                  {"offload_param\" needs stage 3", "found stage 2"});
  expect_contains(error_text([&] { parse(R"({"stage": 0, "offload_optimizer": {"device": "cpu"}})"); }),
                  {"offload_optimizer\" needs stage 1, 2 or 3"});
  expect_contains(error_text([&] { parse(R"({"stage": 1, "reduce_bucket_size": 2.5})"); }),
                  {"\"zero_optimization.reduce_bucket_size\" must be a whole number, found 2.5"});
  expect_contains(error_text([&] { parse(R"({"stage": "one"})"); }),
                  {"\"zero_optimization.stage\" must be a whole number, found \"one\""});
  const auto stage3 = parse(R"({"stage": 3, "offload_param": {"device": "cpu", "pin_memory": true},
                               "offload_optimizer": {"device": "none"}, "stage3_prefetch_bucket_size": 5e7,
                               "stage3_param_persistence_threshold": 1e4, "reduce_bucket_size": 2.5e8})");
  EXPECT_TRUE(stage3.zero.offload_param.enabled());
  EXPECT_TRUE(stage3.zero.offload_param.pin_memory);
  EXPECT_FALSE(stage3.zero.offload_optimizer.enabled());
  EXPECT_EQ(stage3.zero.stage3_prefetch_bucket_size, 50000000);
  EXPECT_EQ(stage3.zero.stage3_param_persistence_threshold, 10000);
  EXPECT_EQ(stage3.zero.reduce_bucket_size, 250000000);
}

TEST(DeepSpeedConfigTest, DeprecatedCpuOffloadMeansOffloadOptimizerWithAWarning) {
  std::vector<std::string> warnings;
  const auto config = parse_deepspeed_config(R"({"zero_optimization": {"stage": 2, "cpu_offload": true}})",
                                             "ds.json", &warnings);
  EXPECT_TRUE(config.zero.offload_optimizer.enabled());
  ASSERT_EQ(warnings.size(), 1u);
  expect_contains(warnings[0], {"deprecated", "cpu_offload -> offload_optimizer"});
}

TEST(DeepSpeedConfigTest, PrecisionBlocks) {
  const auto config = parse_deepspeed_config(
      R"({"fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 12, "loss_scale_window": 500,
                   "hysteresis": 3, "consecutive_hysteresis": true, "min_loss_scale": 0.5}})",
      "ds.json");
  EXPECT_EQ(config.precision.precision, Precision::fp16);
  EXPECT_EQ(config.precision.loss_scale.loss_scale, 0);
  EXPECT_EQ(config.precision.loss_scale.initial_scale_power, 12);
  EXPECT_EQ(config.precision.loss_scale.loss_scale_window, 500);
  EXPECT_EQ(config.precision.loss_scale.hysteresis, 3);
  EXPECT_TRUE(config.precision.loss_scale.consecutive_hysteresis);
  EXPECT_EQ(config.precision.loss_scale.min_loss_scale, 0.5);
  expect_contains(error_text([] {
                    parse_deepspeed_config(R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})",
                                           "ds.json");
                  }),
                  {"fp16 and bf16 are both enabled"});
  EXPECT_EQ(parse_deepspeed_config(R"({"bfloat16": {"enabled": true}})", "ds.json").precision.precision,
            Precision::bf16);
}

// resolve_deepspeed_config's warnings for `config_text` (inline JSON) with `args` on one rank.
std::vector<std::string> resolve_warnings(const std::string& config_text, const TrainingArguments& args) {
  std::vector<std::string> warnings;
  resolve_deepspeed_config(config_text, args, 1, &warnings);
  return warnings;
}

// The one warning resolve_warnings gives; "" (and a failure) when it gives another number.
std::string only_warning(const std::string& config_text, const TrainingArguments& args) {
  const std::vector<std::string> warnings = resolve_warnings(config_text, args);
  EXPECT_EQ(warnings.size(), 1u);
  return warnings.size() == 1 ? warnings[0] : "";
}

TEST(DeepSpeedConfigTest, AbsentGradientClippingWarnsThatMaxGradNormIsNotApplied) {
  TrainingArguments args;
  args.max_grad_norm = 0.5;
  const std::vector<std::string> warnings = resolve_warnings("{}", args);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(
      warnings[0],
      "the deepspeed training argument (inline JSON): max_grad_norm=0.5 is not applied: the DeepSpeed "
      "config has no \"gradient_clipping\", so DeepSpeed's default 0 (no clipping) wins, as in HF. Fix: "
      "\"gradient_clipping\": \"auto\" in the config to clip at max_grad_norm, or --max_grad_norm 0 to "
      "train without clipping");
  // HF's default max_grad_norm (1.0) clips too: its silent loss is worth the same line.
  expect_contains(only_warning("{}", TrainingArguments{}), {"max_grad_norm=1 is not applied"});
  // The config stating the key, or arguments that ask for no clipping, leave nothing to warn about.
  EXPECT_TRUE(resolve_warnings(R"({"gradient_clipping": "auto"})", args).empty());
  EXPECT_TRUE(resolve_warnings(R"({"gradient_clipping": 0.5})", args).empty());
  args.max_grad_norm = 0;
  EXPECT_TRUE(resolve_warnings("{}", args).empty());
}

TEST(DeepSpeedConfigTest, SchedulerBlockWarnsThatANonDefaultLrSchedulerTypeIsNotApplied) {
  TrainingArguments args;
  args.max_grad_norm = 0;
  args.lr_scheduler_type = "cosine";
  const std::string scheduler =
      R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}}})";
  const std::vector<std::string> warnings = resolve_warnings(scheduler, args);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "the deepspeed training argument (inline JSON): lr_scheduler_type=cosine is not applied: the "
            "DeepSpeed config's scheduler (WarmupLR) sets the learning-rate schedule, as in HF. Fix: remove "
            "the config's \"scheduler\" block to schedule with lr_scheduler_type, or leave lr_scheduler_type "
            "at its default");
  // Without a scheduler block the arguments' schedule runs; HF's default linear is DeepSpeed's to replace.
  EXPECT_TRUE(resolve_warnings("{}", args).empty());
  args.lr_scheduler_type = "linear";
  EXPECT_TRUE(resolve_warnings(scheduler, args).empty());
}

TEST(DeepSpeedConfigTest, SchedulerWarmupThatReplacesTheArgumentsWarmupWarns) {
  TrainingArguments args;
  args.max_grad_norm = 0;
  args.warmup_steps = 100;
  const std::vector<std::string> absent =
      resolve_warnings(R"({"scheduler": {"type": "WarmupDecayLR"}})", args);
  ASSERT_EQ(absent.size(), 1u);
  EXPECT_EQ(
      absent[0],
      "the deepspeed training argument (inline JSON): warmup_steps=100 is not applied: the DeepSpeed "
      "config's scheduler (WarmupDecayLR) has no \"warmup_num_steps\", so DeepSpeed's default of 1000 "
      "warmup steps wins, as in HF. Fix: \"warmup_num_steps\": \"auto\" in the config's scheduler params "
      "to warm up as the training arguments ask");
  // A number that disagrees is no warning but HF's mismatch: at once for a warmup in steps, at train start
  // (when the run's steps are known) for a ratio.
  const std::string fifty = R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 50}}})";
  expect_contains(
      error_text([&] { resolve_deepspeed_config(fifty, args, 1); }),
      {"mismatch TrainingArguments values",
       "- scheduler.params.warmup_num_steps=50 vs warmup_steps (max(1, the run's warmup steps))=100",
       "(fix: --warmup_steps 50, or \"auto\")"});
  TrainingArguments ratio = args;
  ratio.warmup_steps = 0;
  ratio.warmup_ratio = 0.1;
  DeepSpeedConfig config = resolve_deepspeed_config(fifty, ratio, 1);
  EXPECT_NO_THROW(finalize_deepspeed_config(config, ratio, 500));  // 10% of 500: 50
  config = resolve_deepspeed_config(fifty, ratio, 1);
  expect_contains(
      error_text([&] { finalize_deepspeed_config(config, ratio, 300); }),
      {"- scheduler.params.warmup_num_steps=50 vs warmup_steps (max(1, the run's warmup steps))=30"});
  args.warmup_steps = 0;
  args.warmup_ratio = 0.1;
  expect_contains(only_warning(R"({"scheduler": {"type": "WarmupLR"}})", args),
                  {"warmup_ratio=0.1 is not applied", "no \"warmup_num_steps\""});
  // The config stating the arguments' warmup ("auto", or the same count), or no warmup asked for: silent.
  EXPECT_TRUE(
      resolve_warnings(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}}})", args)
          .empty());
  args.warmup_ratio = 0;
  args.warmup_steps = 50;
  EXPECT_TRUE(
      resolve_warnings(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 50}}})", args)
          .empty());
  args.warmup_steps = 0;
  EXPECT_TRUE(resolve_warnings(R"({"scheduler": {"type": "WarmupLR"}})", args).empty());
  EXPECT_TRUE(resolve_warnings("{}", args).empty());
}

TEST(DeepSpeedConfigTest, UnsupportedOptimizersAndSchedulersAreErrors) {
  expect_contains(error_text([] { parse_deepspeed_config(R"({"optimizer": {"type": "Lamb"}})", "ds.json"); }),
                  {"\"optimizer.type\" \"Lamb\" is not supported", "Adam and AdamW"});
  expect_contains(error_text([] {
                    parse_deepspeed_config(
                        R"({"optimizer": {"type": "Adam", "params": {"adam_w_mode": false}}})", "ds.json");
                  }),
                  {"adam_w_mode\" false", "Fix: \"adam_w_mode\": true"});
  EXPECT_NO_THROW(
      parse_deepspeed_config(R"({"optimizer": {"type": "adam", "params": {"torch_adam": true}}})", "x"));
  expect_contains(
      error_text([] { parse_deepspeed_config(R"({"scheduler": {"type": "OneCycle"}})", "ds.json"); }),
      {"\"scheduler.type\" \"OneCycle\" is not supported", "WarmupLR, WarmupDecayLR and WarmupCosineLR"});
  expect_contains(error_text([] { parse_deepspeed_config("{\"fp16\": ", "ds.json"); }),
                  {"ds.json is not valid JSON"});
  expect_contains(
      error_text([] { resolve_deepspeed_config("/nonexistent/ds.json", TrainingArguments{}, 1); }),
      {"--deepspeed config /nonexistent/ds.json: expected a file, found nothing at that path. Fix: check the "
       "path"});
}

// Settings that would change the arithmetic are refused, not dropped among the unknown keys; their
// defaults (what berth computes) are accepted.
TEST(DeepSpeedConfigTest, MathChangingSettingsAreRefused) {
  const auto parse = [](const std::string& text) {
    std::vector<std::string> warnings;
    parse_deepspeed_config(text, "ds.json", &warnings);
    return warnings;
  };
  expect_contains(
      error_text([&] { parse(R"({"optimizer": {"type": "Adam", "params": {"bias_correction": false}}})"); }),
      {"ds.json: \"optimizer.params.bias_correction\" false turns off Adam's bias correction",
       "Fix: \"bias_correction\": true"});
  expect_contains(
      error_text([&] { parse(R"({"optimizer": {"type": "AdamW", "params": {"amsgrad": true}}})"); }),
      {"\"optimizer.params.amsgrad\" true asks for AMSGrad", "Fix: \"amsgrad\": false"});
  expect_contains(error_text([&] { parse(R"({"data_types": {"grad_accum_dtype": "bf16"}})"); }),
                  {"ds.json: \"data_types.grad_accum_dtype\" is \"bf16\"", "float32 only",
                   "Fix: \"grad_accum_dtype\": \"fp32\""});
  EXPECT_TRUE(parse(R"({"optimizer": {"type": "Adam", "params": {"bias_correction": true, "amsgrad": false}},
                        "data_types": {"grad_accum_dtype": "fp32"}})")
                  .empty());
}

TEST(DeepSpeedConfigTest, FsdpOptionsMapOntoZero) {
  EXPECT_EQ(dist::zero_options_from_fsdp("").stage, 0);
  EXPECT_EQ(dist::zero_options_from_fsdp("full_shard").stage, 3);
  EXPECT_EQ(dist::zero_options_from_fsdp("shard_grad_op").stage, 2);
  EXPECT_EQ(dist::zero_options_from_fsdp("no_shard").stage, 0);
  const auto offload = dist::zero_options_from_fsdp("full_shard offload auto_wrap");
  EXPECT_EQ(offload.stage, 3);
  EXPECT_TRUE(offload.offload_param.enabled());
  EXPECT_TRUE(offload.offload_optimizer.enabled());
  const auto stage2 = dist::zero_options_from_fsdp("shard_grad_op offload");
  EXPECT_TRUE(stage2.offload_optimizer.enabled());
  EXPECT_FALSE(stage2.offload_param.enabled());  // parameters are partitioned only at stage 3
  expect_contains(error_text([] { dist::zero_options_from_fsdp("full_shard spam"); }),
                  {"unknown fsdp option 'spam'"});
  expect_contains(error_text([] { dist::zero_options_from_fsdp("hybrid_shard"); }),
                  {"'hybrid_shard'", "not supported"});
  expect_contains(error_text([] { dist::zero_options_from_fsdp("full_shard shard_grad_op"); }),
                  {"2 sharding strategies"});
  expect_contains(error_text([] { dist::zero_options_from_fsdp("offload"); }), {"can't work on its own"});
}

// Found by fuzz/deepspeed_config_fuzzer: 1e400 escaped as nlohmann's out_of_range (the CLI exited 1).
TEST(DeepSpeedConfigTest, NumberBeyondADoubleIsInvalidJsonWithTheFix) {
  expect_contains(error_text([] { parse_deepspeed_config(R"({"train_batch_size": 1e400})", "ds.json"); }),
                  {"ds.json", "number overflow parsing '1e400'", "Fix:"});
}

}  // namespace
}  // namespace berth::train
