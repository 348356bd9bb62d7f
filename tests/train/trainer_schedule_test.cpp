// Tests for the HF arguments berth used to ignore (issue 18): lr_scheduler_kwargs and
// label_smoothing_factor, eval_on_start, save_only_model, save_on_each_node and auto_find_batch_size, as
// training arguments (round trips, refusals) and through the Trainer on a tiny BERT.
#include "berth/train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "berth/model/bert_for_sequence_classification.h"
#include "berth/optim/lr_scheduler.h"
#include "berth/optim/scheduler_kwargs.h"
#include "berth/train/checkpoint_dir.h"
#include "berth/train/label_smoother.h"
#include "berth/train/unsupported_hf_arguments.h"
#include "support/test_support.h"
#include "support/tiny_training.h"

namespace berth::train {
namespace {

namespace fs = std::filesystem;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;
using berth::testing::tiny_args;

const std::vector<std::string> kScheduleArgumentNames = {"label_smoothing_factor", "lr_scheduler_kwargs",
                                                         "eval_on_start",          "save_only_model",
                                                         "save_on_each_node",      "auto_find_batch_size"};

TEST(ScheduleArguments, AreRealFieldsWithHfDefaults) {
  for (const std::string& name : kScheduleArgumentNames) {
    EXPECT_FALSE(is_unsupported_hf_training_argument(name)) << name;
    bool listed = false;
    for (const ArgumentSpec& spec : training_argument_specs()) listed |= spec.name == name;
    EXPECT_TRUE(listed) << name << " is not in berth train --help";
  }
  const TrainingArguments defaults;
  EXPECT_EQ(defaults.label_smoothing_factor, 0.0);
  EXPECT_FALSE(defaults.lr_scheduler_kwargs);
  EXPECT_FALSE(defaults.eval_on_start || defaults.save_only_model || defaults.save_on_each_node ||
               defaults.auto_find_batch_size);
}

TEST(ScheduleArguments, HfsOwnTrainingArgsJsonSetsThemWithoutWarnings) {
  std::vector<std::string> warnings;
  const TrainingArguments args = TrainingArguments::load(
      std::string(BERTH_SOURCE_DIR) + "/tests/train/fixtures/hf_training_args.json", &warnings);
  EXPECT_EQ(args.lr_scheduler_kwargs, std::optional<std::string>("{}"));  // HF's {} for cosine
  for (const std::string& warning : warnings)
    for (const std::string& name : kScheduleArgumentNames)
      EXPECT_FALSE(berth::testing::contains(warning, name)) << name << " in: " << warning;
}

TEST(ScheduleArguments, RoundTripThroughTrainingArgsJsonWithKwargsAsAnObject) {
  TrainingArguments args;
  args.output_dir = "out";
  args.lr_scheduler_type = "cosine_with_restarts";
  set_training_argument(args, "lr_scheduler_kwargs", R"({"num_cycles": 3})");  // HF's CLI: a JSON string
  set_training_argument(args, "label_smoothing_factor", "0.1");
  for (const char* flag : {"eval_on_start", "save_only_model", "save_on_each_node", "auto_find_batch_size"})
    set_training_argument(args, flag, "true");
  args.eval_strategy = "steps";
  args.validate();
  const std::string text = args.to_json_text();
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json.at("lr_scheduler_kwargs"), nlohmann::json({{"num_cycles", 3}}));  // as HF writes it
  const TrainingArguments back = TrainingArguments::from_json_text(text);
  EXPECT_EQ(back.to_json_text(), text);
  EXPECT_EQ(back.label_smoothing_factor, 0.1);
  EXPECT_TRUE(back.eval_on_start && back.save_only_model && back.save_on_each_node &&
              back.auto_find_batch_size);
  // HF's own file: the dict, or null when unset; a JSON string of one as well.
  std::vector<std::string> warnings;
  const auto hf = TrainingArguments::from_json_text(
      R"({"output_dir": "o", "lr_scheduler_type": "polynomial", "lr_scheduler_kwargs": {"power": 2.0}})",
      "training_args.json", &warnings);
  EXPECT_EQ(nlohmann::json::parse(*hf.lr_scheduler_kwargs), nlohmann::json({{"power", 2.0}}));
  EXPECT_TRUE(warnings.empty());
  EXPECT_FALSE(TrainingArguments::from_json_text(R"({"output_dir": "o", "lr_scheduler_kwargs": null})")
                   .lr_scheduler_kwargs);
  EXPECT_TRUE(
      TrainingArguments::from_json_text(
          R"({"output_dir": "o", "lr_scheduler_type": "cosine", "lr_scheduler_kwargs": "{\"num_cycles\": 1}"})")
          .lr_scheduler_kwargs);
}

TEST(ScheduleArguments, RefusalsNameTheArgumentAndTheFix) {
  TrainingArguments args;
  args.output_dir = "out";
  args.lr_scheduler_type = "cosine";
  args.lr_scheduler_kwargs = R"({"num_cycle": 2})";
  expect_contains(error_text([&] { args.validate(); }),
                  {"cosine takes num_cycles, found num_cycle", "Fix: remove num_cycle"});
  args.lr_scheduler_kwargs = "{oops";
  expect_contains(error_text([&] { args.validate(); }),
                  {"lr_scheduler_kwargs", "expected a JSON object, found invalid JSON", "Fix:"});
  args.lr_scheduler_kwargs.reset();
  args.lr_scheduler_type = "reduce_lr_on_plateau";
  expect_contains(error_text([&] { args.validate(); }),
                  {"reduce_lr_on_plateau requires an eval strategy", "found eval_strategy no", "Fix:"});
  args.eval_strategy = "epoch";
  args.validate();
  EXPECT_EQ(args.resolved_metric_for_best_model(), "loss");  // HF's default for the plateau's metric
  args.label_smoothing_factor = 1.0;
  expect_contains(error_text([&] { args.validate(); }), {"label_smoothing_factor must be in [0, 1), found 1",
                                                         "Fix: e.g. label_smoothing_factor 0.1"});
}

TEST(ScheduleArguments, ShouldSaveIsHfsDecision) {
  TrainingArguments args;
  // One writer by default: global rank 0, wherever the other ranks are.
  EXPECT_TRUE(args.should_save(0, 0));
  EXPECT_FALSE(args.should_save(4, 0));  // the first process of a second node
  EXPECT_FALSE(args.should_save(1, 1));
  args.save_on_each_node = true;  // every node's local rank 0
  EXPECT_TRUE(args.should_save(0, 0));
  EXPECT_TRUE(args.should_save(4, 0));
  EXPECT_FALSE(args.should_save(5, 1));
  EXPECT_FALSE(args.should_save(1, 1));  // one node: nothing changes
}

struct ScheduleRun {
  std::ostringstream console;
  std::unique_ptr<Trainer> trainer;
};

// `initializer_range`: 0.02 (BERT's) gives near-uniform predictions, on which smoothing changes little.
std::unique_ptr<ScheduleRun> schedule_run(const TrainingArguments& args, double initializer_range = 0.02) {
  auto run = std::make_unique<ScheduleRun>();
  TrainerOptions options;
  options.args = args;
  options.model_init = [initializer_range](const Trial*) {
    BertConfig config = berth::testing::tiny_config(0.0);
    config.initializer_range = initializer_range;
    return std::shared_ptr<TaskModel>(BertForSequenceClassification(config).ptr());
  };
  options.train_dataset = berth::testing::synthetic_dataset(60, 1);
  options.eval_dataset = berth::testing::synthetic_dataset(24, 2);
  options.console = &run->console;
  run->trainer = std::make_unique<Trainer>(std::move(options));
  return run;
}

std::map<std::string, at::Tensor> schedule_run_weights(const Trainer& trainer) {
  std::map<std::string, at::Tensor> out;
  for (const auto& item : trainer.model()->module().named_parameters())
    out[item.key()] = item.value().detach().clone();
  return out;
}

TEST(TrainerSchedule, EvalOnStartEvaluatesAtStepZero) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("out"));
  args.eval_on_start = true;
  args.max_steps = 2;
  auto run = schedule_run(args);
  run->trainer->train();
  const auto& history = run->trainer->state().log_history;
  ASSERT_FALSE(history.empty());
  EXPECT_TRUE(history.front().count("eval_loss"));
  EXPECT_EQ(history.front().at("step"), 0);
  EXPECT_EQ(history.front().at("epoch"), 0);
  int evaluations = 0;
  for (const auto& entry : history) evaluations += static_cast<int>(entry.count("eval_loss"));
  EXPECT_EQ(evaluations, 1);  // eval_strategy no: only the one at the start
}

TEST(TrainerSchedule, ReduceLrOnPlateauStepsOnEachEvaluationsLoss) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("out"));
  args.learning_rate = 2e-2;  // large enough that the eval loss stalls and rises
  args.num_train_epochs = 6;
  args.eval_strategy = "steps";
  args.eval_steps = 2;
  args.logging_steps = 2;
  args.eval_on_start = true;  // evaluated, but does not step the schedule (HF's skip_scheduler)
  args.lr_scheduler_type = "reduce_lr_on_plateau";
  args.lr_scheduler_kwargs = R"({"patience": 0, "factor": 0.5})";
  auto run = schedule_run(args);
  run->trainer->train();
  // The lr logged at step s is the schedule after the evaluations before s (the log comes first).
  optim::LrScheduler expected(args.learning_rate,
                              optim::hf_scheduler_options(args.lr_scheduler_type, 0, 100, args.learning_rate,
                                                          *args.lr_scheduler_kwargs));
  int reductions = 0;
  double last_lr = args.learning_rate;
  for (const auto& entry : run->trainer->state().log_history) {
    if (entry.count("learning_rate")) {
      EXPECT_EQ(entry.at("learning_rate"), expected.lr()) << "step " << entry.at("step");
      reductions += entry.at("learning_rate") < last_lr;
      last_lr = entry.at("learning_rate");
    }
    if (entry.count("eval_loss") && entry.at("step") > 0) expected.step_on_metric(entry.at("eval_loss"));
  }
  EXPECT_GE(reductions, 1);  // the run did hit a plateau
}

TEST(TrainerSchedule, LabelSmoothingChangesTheLossesAsHfsLabelSmoother) {
  // A frozen model (lr 0, no dropout) and one batch of all 60 rows: the logged training loss is the
  // smoothed loss of the model's logits over the training set, and eval_loss the same over the eval set.
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("out"));
  args.learning_rate = 0;
  args.max_steps = 1;
  args.logging_steps = 1;
  args.per_device_train_batch_size = 60;
  args.label_smoothing_factor = 0.2;
  auto run = schedule_run(args, 0.5);
  run->trainer->train();
  const auto train_rows = berth::testing::synthetic_dataset(60, 1);
  const PredictionOutput train_prediction = run->trainer->predict(*train_rows);
  const double smoothed =
      label_smoothed_loss(train_prediction.logits, train_rows->labels(), 0.2, false).item<double>();
  EXPECT_NEAR(train_prediction.metrics.at("test_loss"), smoothed, 1e-5);  // predict's loss is smoothed too
  double logged = -1;
  for (const auto& entry : run->trainer->state().log_history)
    if (entry.count("loss")) logged = entry.at("loss");
  EXPECT_NEAR(logged, smoothed, 1e-5);
  const auto eval_rows = berth::testing::synthetic_dataset(24, 2);
  const auto eval = run->trainer->evaluate();
  EXPECT_NEAR(eval.at("eval_loss"),
              label_smoothed_loss(run->trainer->predict(*eval_rows).logits, eval_rows->labels(), 0.2, false)
                  .item<double>(),
              1e-5);
  // And without smoothing the same frozen model's loss is the cross-entropy, which is another number.
  args.label_smoothing_factor = 0;
  args.output_dir = dir.file("plain");
  auto unsmoothed = schedule_run(args, 0.5);
  unsmoothed->trainer->train();
  EXPECT_GT(std::abs(unsmoothed->trainer->predict(*train_rows).metrics.at("test_loss") - smoothed), 1e-3);
}

TEST(TrainerSchedule, SaveOnlyModelCheckpointsRefuseToResume) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("out"));
  args.save_strategy = "steps";
  args.save_steps = 2;
  args.max_steps = 4;
  args.save_only_model = true;
  auto run = schedule_run(args);
  run->trainer->train();
  const std::string checkpoint = dir.file("out/checkpoint-2");
  EXPECT_TRUE(fs::exists(checkpoint + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(checkpoint + "/trainer_state.json"));
  for (const char* file : {"optimizer.safetensors", "scheduler.json", "rng_state.safetensors"})
    EXPECT_FALSE(fs::exists(checkpoint + "/" + file)) << file;
  args.max_steps = 6;
  auto resumed = schedule_run(args);
  expect_contains(error_text([&] { resumed->trainer->train(std::string("latest")); }),
                  {"cannot resume from", "checkpoint-4", "save_only_model", "Fix:"});
}

TEST(TrainerSchedule, AutoFindBatchSizeShrinksLikeAccelerateAndEndsAsARunStartedThere) {
  EXPECT_EQ(next_executable_batch_size(8), 7);  // int(8 * 0.9)
  EXPECT_EQ(next_executable_batch_size(7), 6);
  EXPECT_EQ(next_executable_batch_size(1), 0);
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("auto"));
  args.auto_find_batch_size = true;
  args.num_train_epochs = 1;
  auto run = schedule_run(args);
  std::vector<int64_t> tried;
  // "Out of memory" above 5 rows per batch, at the first forward of each attempt.
  run->trainer->set_out_of_memory_hook_for_testing([&](int64_t batch_size) {
    if (tried.empty() || tried.back() != batch_size) tried.push_back(batch_size);
    TORCH_CHECK_WITH(OutOfMemoryError, batch_size <= 5, "CUDA out of memory (simulated at ", batch_size, ")");
  });
  const TrainOutput out = run->trainer->train();
  EXPECT_EQ(tried, (std::vector<int64_t>{8, 7, 6, 5}));
  EXPECT_EQ(run->trainer->args().per_device_train_batch_size, 5);
  EXPECT_EQ(run->trainer->state().train_batch_size, 5);
  expect_contains(run->console.str(), {"out of memory at per_device_train_batch_size 8; auto_find_batch_size "
                                       "starts again with 7"});
  TrainingArguments direct_args = tiny_args(dir.file("direct"));
  direct_args.num_train_epochs = 1;
  direct_args.per_device_train_batch_size = 5;
  auto direct = schedule_run(direct_args);
  const TrainOutput direct_out = direct->trainer->train();
  EXPECT_EQ(out.global_step, direct_out.global_step);
  const auto a = schedule_run_weights(*run->trainer);
  const auto b = schedule_run_weights(*direct->trainer);
  for (const auto& [name, tensor] : a) EXPECT_TRUE(torch::equal(tensor, b.at(name))) << name;
}

// HF's train(): resuming with auto_find_batch_size starts from the checkpoint's train_batch_size, so the
// resumed run goes on at the size the out-of-memory retries found, as a run started there would.
TEST(TrainerSchedule, AutoFindBatchSizeResumesAtTheCheckpointsReducedSize) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("auto"));
  args.auto_find_batch_size = true;
  args.max_steps = 6;
  args.save_strategy = "steps";
  args.save_steps = 2;
  auto first = schedule_run(args);
  first->trainer->set_out_of_memory_hook_for_testing([](int64_t batch_size) {
    TORCH_CHECK_WITH(OutOfMemoryError, batch_size <= 5, "CUDA out of memory (simulated at ", batch_size, ")");
  });
  first->trainer->train();
  ASSERT_EQ(TrainerState::load(dir.file("auto/checkpoint-2/trainer_state.json")).train_batch_size, 5);
  auto resumed = schedule_run(args);  // the argument still says 8
  std::vector<int64_t> sizes;
  resumed->trainer->set_out_of_memory_hook_for_testing([&](int64_t batch_size) {
    if (sizes.empty() || sizes.back() != batch_size) sizes.push_back(batch_size);
  });
  resumed->trainer->train(dir.file("auto/checkpoint-2"));
  EXPECT_EQ(sizes, std::vector<int64_t>{5});
  EXPECT_EQ(resumed->trainer->state().train_batch_size, 5);
  expect_contains(resumed->console.str(),
                  {"auto_find_batch_size: resuming with per_device_train_batch_size 5, "
                   "the size checkpoint-2 trained with (the argument says 8)"});
  TrainingArguments direct_args = tiny_args(dir.file("direct"));
  direct_args.max_steps = 6;
  direct_args.per_device_train_batch_size = 5;
  auto direct = schedule_run(direct_args);
  direct->trainer->train();
  const auto a = schedule_run_weights(*resumed->trainer);
  const auto b = schedule_run_weights(*direct->trainer);
  for (const auto& [name, tensor] : a) EXPECT_TRUE(torch::equal(tensor, b.at(name))) << name;
  // Without auto_find_batch_size the argument decides, as in HF.
  args.auto_find_batch_size = false;
  args.output_dir = dir.file("auto");
  auto plain = schedule_run(args);
  sizes.clear();
  plain->trainer->set_out_of_memory_hook_for_testing([&](int64_t batch_size) {
    if (sizes.empty() || sizes.back() != batch_size) sizes.push_back(batch_size);
  });
  plain->trainer->train(dir.file("auto/checkpoint-4"));
  EXPECT_EQ(sizes, std::vector<int64_t>{8});
}

TEST(TrainerSchedule, OutOfMemoryWithoutAutoFindOrAtBatchOneIsAnError) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("plain"));
  auto plain = schedule_run(args);
  plain->trainer->set_out_of_memory_hook_for_testing(
      [](int64_t) { TORCH_CHECK_WITH(OutOfMemoryError, false, "CUDA out of memory (simulated)"); });
  EXPECT_THROW(plain->trainer->train(), c10::OutOfMemoryError);
  args.output_dir = dir.file("auto");
  args.per_device_train_batch_size = 2;
  args.auto_find_batch_size = true;
  auto run = schedule_run(args);
  run->trainer->set_out_of_memory_hook_for_testing(
      [](int64_t) { TORCH_CHECK_WITH(OutOfMemoryError, false, "CUDA out of memory (simulated)"); });
  expect_contains(error_text([&] { run->trainer->train(); }),
                  {"auto_find_batch_size: out of memory at per_device_train_batch_size 1",
                   "No executable batch size found, reached zero.", "Fix:"});
}

}  // namespace
}  // namespace berth::train
