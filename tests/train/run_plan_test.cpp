// RunPlan: resolved once from the arguments and a DeepSpeed/FSDP config; the Trainer runs on it without
// reading the config again, and the memory report measures gradients at the step's peak.
#include "berth/train/run_plan.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/model/bert_for_sequence_classification.h"
#include "berth/train/trainer.h"
#include "support/test_support.h"
#include "support/tiny_training.h"

namespace berth::train {
namespace {

namespace fs = std::filesystem;
using berth::testing::contains;
using berth::testing::synthetic_dataset;
using berth::testing::TempDir;
using berth::testing::tiny_config;

// tiny_args as 3 steps with a loss logged at each.
TrainingArguments plan_args(const std::string& output_dir) {
  TrainingArguments args = berth::testing::tiny_args(output_dir);
  args.max_steps = 3;
  args.logging_steps = 1;
  return args;
}

RunPlan local_plan(const TrainingArguments& args) {
  return resolve_run_plan(args, local_process_context(args));
}

std::unique_ptr<Trainer> make_trainer(const TrainingArguments& args, std::shared_ptr<const RunPlan> plan,
                                      std::ostream* console) {
  TrainerOptions options;
  options.args = args;
  options.model_init = [](const Trial*) { return BertForSequenceClassification(tiny_config()).ptr(); };
  options.train_dataset = synthetic_dataset(40, 1);
  options.plan = std::move(plan);
  options.console = console;
  return std::make_unique<Trainer>(std::move(options));
}

const char* kZeroOneWithScheduler = R"({
  "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
  "zero_optimization": {"stage": 1},
  "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                "warmup_num_steps": "auto", "total_num_steps": "auto"}}})";

// The config file is gone once the plan is made: a Trainer that read it again would fail.
TEST(RunPlan, TheTrainerRunsOnThePlanWithoutReadingTheConfigAgain) {
  TempDir dir;
  const std::string config = dir.file("ds.json");
  std::ofstream(config) << kZeroOneWithScheduler;
  TrainingArguments args = plan_args(dir.file("out"));
  args.warmup_steps = 1;  // DeepSpeed's WarmupDecayLR needs at least one warmup step
  args.deepspeed = config;
  auto plan = std::make_shared<const RunPlan>(local_plan(args));
  fs::remove(config);
  EXPECT_EQ(plan->gradient_sync->strategy(), "zero-1");
  EXPECT_EQ(plan->sharding, "zero-1");
  std::ostringstream console;
  auto trainer = make_trainer(args, plan, &console);
  EXPECT_EQ(trainer->train().global_step, 3);
  EXPECT_TRUE(contains(console.str(), "memory per rank (zero-1, fp32)")) << console.str();
}

TEST(RunPlan, ClippingIsTheConfigsWhenThereIsOneElseTheArguments) {
  TempDir dir;
  TrainingArguments args = plan_args(dir.file("out"));
  args.max_grad_norm = 0.5;
  EXPECT_EQ(local_plan(args).max_grad_norm(args), 0.5);
  args.deepspeed = kZeroOneWithScheduler;  // "gradient_clipping": "auto" is max_grad_norm
  EXPECT_EQ(local_plan(args).max_grad_norm(args), 0.5);
  args.deepspeed = R"({"gradient_clipping": 0.5})";
  EXPECT_EQ(local_plan(args).max_grad_norm(args), 0.5);
  args.deepspeed = R"({"train_micro_batch_size_per_gpu": "auto"})";  // no gradient_clipping: DeepSpeed's 0
  EXPECT_EQ(local_plan(args).max_grad_norm(args), 0.0);
}

// Each run (a search trial may be shorter) fills the config's "auto" steps for its own length.
TEST(RunPlan, TheConfigsScheduleIsFilledForEachRunLength) {
  TempDir dir;
  TrainingArguments args = plan_args(dir.file("out"));
  args.warmup_steps = 5;
  args.deepspeed = kZeroOneWithScheduler;
  const RunPlan plan = local_plan(args);
  EXPECT_EQ(plan.schedule(args, 100).type, optim::SchedulerType::WarmupDecayLR);
  EXPECT_EQ(plan.schedule(args, 100).total_steps, 100);
  EXPECT_EQ(plan.schedule(args, 40).total_steps, 40);
  EXPECT_EQ(plan.schedule(args, 40).warmup_steps, 5);
  args.deepspeed.reset();
  args.lr_scheduler_type = "cosine";
  const optim::SchedulerOptions own = local_plan(args).schedule(args, 30);
  EXPECT_EQ(own.type, optim::SchedulerType::Cosine);
  EXPECT_EQ(own.total_steps, 30);
  EXPECT_EQ(own.warmup_steps, 5);
}

// A config without gradient_clipping silently turns --max_grad_norm off (as in HF); the plan says so once,
// with the config key and the fix, and the Trainer prints it.
TEST(RunPlan, WarnsOnceWhenTheConfigTurnsClippingOff) {
  TempDir dir;
  TrainingArguments args = plan_args(dir.file("out"));
  args.max_grad_norm = 0.5;
  args.deepspeed = R"({"train_micro_batch_size_per_gpu": "auto"})";
  auto plan = std::make_shared<const RunPlan>(local_plan(args));
  int clipping_warnings = 0;
  for (const std::string& warning : plan->warnings) {
    if (!contains(warning, "max_grad_norm=0.5 is not applied")) continue;
    ++clipping_warnings;
    EXPECT_TRUE(contains(warning, "no \"gradient_clipping\"")) << warning;
    EXPECT_TRUE(contains(warning, "Fix: \"gradient_clipping\": \"auto\"")) << warning;
  }
  EXPECT_EQ(clipping_warnings, 1);
  std::ostringstream console;
  auto trainer = make_trainer(args, plan, &console);
  EXPECT_TRUE(
      contains(console.str(), "warning: the deepspeed training argument (inline JSON): max_grad_norm=0.5"))
      << console.str();
  args.deepspeed = R"({"gradient_clipping": "auto"})";
  for (const std::string& warning : local_plan(args).warnings)
    EXPECT_FALSE(contains(warning, "max_grad_norm")) << warning;
}

TEST(RunPlan, TheStrategyFollowsFsdpAndTheWorldSize) {
  TempDir dir;
  TrainingArguments args = plan_args(dir.file("out"));
  EXPECT_EQ(local_plan(args).gradient_sync->strategy(), "local");
  EXPECT_EQ(local_plan(args).sharding, "");
  args.fsdp = "shard_grad_op";
  EXPECT_EQ(local_plan(args).gradient_sync->strategy(), "zero-2");
  args.fsdp = "full_shard offload";
  EXPECT_EQ(local_plan(args).sharding, "zero-3 (offload_optimizer cpu, offload_param cpu)");
}

// The report's measured gradients are those of the step's peak, not what is left after the step freed them.
TEST(RunPlan, TheMemoryReportMeasuresGradientsAtThePeak) {
  TempDir dir;
  const TrainingArguments args = plan_args(dir.file("out"));
  std::ostringstream console;
  auto trainer = make_trainer(args, nullptr, &console);
  trainer->train();
  int64_t trainable_bytes = 0;
  for (const auto& p : trainer->model()->module().parameters()) trainable_bytes += p.numel() * 4;
  std::ifstream log(dir.file("out") + "/log.jsonl");
  std::string line;
  std::optional<nlohmann::json> memory;
  while (std::getline(log, line)) {
    const auto entry = nlohmann::json::parse(line);
    if (entry.contains("memory_held_gradients")) memory = entry;
  }
  ASSERT_TRUE(memory) << "no memory entry in log.jsonl";
  EXPECT_EQ((*memory)["memory_held_gradients"].get<double>(), static_cast<double>(trainable_bytes));
  EXPECT_EQ((*memory)["memory_held_optimizer_states"].get<double>(),
            2.0 * static_cast<double>(trainable_bytes));
  EXPECT_FALSE(contains(console.str(), "measured 0.00 MB")) << console.str();
}

}  // namespace
}  // namespace berth::train
