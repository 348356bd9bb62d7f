// HF's activation_checkpointing / gradient_checkpointing arguments and DeepSpeed's activation_checkpointing
// section: read from the command line and both transformers spellings of training_args.json, refused where
// they ask for what berth cannot do, and honoured by the Trainer (each layer recomputed once per micro-batch,
// the weights those of a run without it).
#include "berth/train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/model/activation_checkpoint.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/train/deepspeed_config.h"
#include "berth/train/unsupported_hf_arguments.h"
#include "support/test_support.h"
#include "support/tiny_training.h"

namespace berth::train {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;
using berth::testing::tiny_args;

TEST(GradientCheckpointingArguments, BothHfNamesAreOneRealArgument) {
  for (const char* name : {"activation_checkpointing", "gradient_checkpointing",
                           "activation_checkpointing_kwargs", "gradient_checkpointing_kwargs"}) {
    EXPECT_FALSE(is_unsupported_hf_training_argument(name)) << name;
    bool listed = false;
    for (const ArgumentSpec& spec : training_argument_specs()) listed |= spec.name == name;
    EXPECT_TRUE(listed) << name << " is not in berth train --help";
  }
  for (const char* name : {"activation_checkpointing", "gradient_checkpointing"}) {
    TrainingArguments args;
    EXPECT_FALSE(args.gradient_checkpointing);
    set_training_argument(args, name, "true");
    EXPECT_TRUE(args.gradient_checkpointing) << name;
  }
  TrainingArguments args;
  args.output_dir = "out";
  set_training_argument(args, "gradient_checkpointing_kwargs",
                        R"({"use_reentrant": false, "every_n_layers": 3})");
  args.validate();
  EXPECT_EQ(args.checkpoint_every_n_layers(), 3);
  EXPECT_EQ(TrainingArguments().checkpoint_every_n_layers(), 1);
  // Written under both names, as transformers 5 writes them, the kwargs as objects; and read back.
  args.gradient_checkpointing = true;
  const nlohmann::json json = nlohmann::json::parse(args.to_json_text());
  EXPECT_EQ(json.at("activation_checkpointing"), true);
  EXPECT_EQ(json.at("gradient_checkpointing"), true);
  EXPECT_EQ(json.at("activation_checkpointing_kwargs").at("every_n_layers"), 3);
  EXPECT_EQ(json.at("gradient_checkpointing_kwargs").at("use_reentrant"), false);
  const TrainingArguments back = TrainingArguments::from_json_text(args.to_json_text());
  EXPECT_TRUE(back.gradient_checkpointing);
  EXPECT_EQ(back.checkpoint_every_n_layers(), 3);
}

TEST(GradientCheckpointingArguments, TrainingArgsJsonOfTransformers4And5) {
  std::vector<std::string> warnings;
  const auto v4 = TrainingArguments::from_json_text(
      R"({"output_dir": "o", "gradient_checkpointing": true, "gradient_checkpointing_kwargs": {"use_reentrant": true}})",
      "v4.json", &warnings);
  EXPECT_TRUE(v4.gradient_checkpointing);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  const auto v5 = TrainingArguments::from_json_text(
      R"({"output_dir": "o", "activation_checkpointing": true, "gradient_checkpointing": true,
          "activation_checkpointing_kwargs": {"every_n_layers": 2}, "gradient_checkpointing_kwargs": {"every_n_layers": 2}})",
      "v5.json", &warnings);
  EXPECT_TRUE(v5.gradient_checkpointing);
  EXPECT_EQ(v5.checkpoint_every_n_layers(), 2);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  expect_contains(
      error_text([] {
        TrainingArguments::from_json_text(
            R"({"output_dir": "o", "activation_checkpointing": true, "gradient_checkpointing": false})",
            "mixed.json");
      }),
      {"mixed.json", "\"gradient_checkpointing\" is false but \"activation_checkpointing\" is true",
       "Fix: give both the same value"});
}

TEST(GradientCheckpointingArguments, OptionsBerthCannotHonourAreRefusedWithTheFix) {
  auto refused = [](const std::string& kwargs) {
    return error_text([&] {
      TrainingArguments args;
      set_training_argument(args, "activation_checkpointing_kwargs", kwargs);
      args.output_dir = "o";
      args.validate();
    });
  };
  expect_contains(refused(R"({"offload": true})"), {"\"offload\": true", "Fix: remove it"});
  expect_contains(refused(R"({"preserve_rng_state": false})"),
                  {"\"preserve_rng_state\": false", "restores the random generators"});
  expect_contains(refused(R"({"every_n_layers": 0})"), {"every_n_layers", ">= 1", "Fix:"});
  expect_contains(refused(R"([1])"), {"must be a JSON object", "Fix: e.g."});
  expect_contains(refused("{not json"), {"must be a JSON object", "Fix: e.g."});
}

TEST(GradientCheckpointingDeepSpeed, TheSectionIsReadAndItsHostOptionsRefused) {
  std::vector<std::string> warnings;
  parse_deepspeed_config(R"({"activation_checkpointing": {"partition_activations": false,
      "cpu_checkpointing": false, "contiguous_memory_optimization": true, "number_checkpoints": 4,
      "synchronize_checkpoint_boundary": true, "profile": false}})",
                         "ds.json", &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();  // every key read
  expect_contains(
      error_text([] {
        parse_deepspeed_config(R"({"activation_checkpointing": {"partition_activations": true}})", "ds.json");
      }),
      {"ds.json", "activation_checkpointing.partition_activations", "Fix: \"partition_activations\": false"});
  expect_contains(error_text([] {
                    parse_deepspeed_config(R"({"activation_checkpointing": {"cpu_checkpointing": true}})",
                                           "ds.json");
                  }),
                  {"activation_checkpointing.cpu_checkpointing", "Fix: \"cpu_checkpointing\": false"});
  parse_deepspeed_config(R"({"activation_checkpointing": {"unheard_of": 1}})", "ds.json", &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  expect_contains(warnings[0], {"activation_checkpointing.unheard_of"});
}

double checkpointing_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

struct CheckpointingTrainRun {
  std::map<std::string, at::Tensor> weights;
  int64_t recomputations = 0;
  int64_t steps = 0;
};

// The tiny BERT classifier (2 layers, dropout 0.1) trained for 6 steps of 8 rows.
CheckpointingTrainRun checkpointing_train(const std::string& dir, bool on, const std::string& kwargs = "") {
  TrainingArguments args = tiny_args(dir);
  args.max_steps = 6;
  args.gradient_checkpointing = on;
  if (!kwargs.empty()) args.gradient_checkpointing_kwargs = kwargs;
  TrainerOptions options;
  options.args = args;
  // model_init: the Trainer seeds before building, so both runs start from the same weights.
  options.model_init = [](const Trial*) {
    return std::shared_ptr<TaskModel>(BertForSequenceClassification(berth::testing::tiny_config(0.1)).ptr());
  };
  options.train_dataset = berth::testing::synthetic_dataset(60, 1);
  std::ostringstream console;
  options.console = &console;
  Trainer trainer(std::move(options));
  const int64_t before = checkpoint_recomputations();
  trainer.train();
  CheckpointingTrainRun run;
  run.recomputations = checkpoint_recomputations() - before;
  run.steps = trainer.state().global_step;
  for (const auto& item : trainer.model()->module().named_parameters())
    run.weights[item.key()] = item.value().detach().clone();
  return run;
}

TEST(GradientCheckpointingTrainer, RecomputesEachLayerOncePerStepAndTrainsTheSameWeights) {
  TempDir dir;
  const CheckpointingTrainRun plain = checkpointing_train(dir.file("plain"), false);
  const CheckpointingTrainRun on = checkpointing_train(dir.file("on"), true);
  const CheckpointingTrainRun every_other =
      checkpointing_train(dir.file("every2"), true, R"({"every_n_layers": 2})");
  EXPECT_EQ(plain.recomputations, 0);
  ASSERT_EQ(on.steps, 6);
  EXPECT_EQ(on.recomputations, 2 * on.steps);  // 2 layers, one micro-batch per step
  EXPECT_EQ(every_other.recomputations, on.steps);
  for (const auto& [name, tensor] : plain.weights) {
    EXPECT_LE(checkpointing_diff(tensor, on.weights.at(name)), 1e-6) << name;
    EXPECT_LE(checkpointing_diff(tensor, every_other.weights.at(name)), 1e-6) << name;
  }
}

}  // namespace
}  // namespace berth::train
