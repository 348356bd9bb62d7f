// Tests for the training flags: both spellings, --args file under command-line flags, error texts.
#include "../../cli/training_flags.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "support/test_support.h"

namespace berth::cli {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;

// Parses argv (after the program name) with a fresh command and resolves the arguments.
train::TrainingArguments resolve(std::vector<std::string> argv,
                                 std::vector<std::string>* warnings = nullptr) {
  CLI::App app("test");
  TrainingFlags flags;
  add_training_flags(app, flags);
  std::reverse(argv.begin(), argv.end());  // CLI11 takes a vector in reverse order
  app.parse(argv);
  return resolve_training_arguments(flags, warnings);
}

TEST(TrainingFlagsTest, UnderscoreAndDashSpellingsAreOneFlag) {
  EXPECT_EQ(resolve({"--max_steps", "10"}).max_steps, 10);
  EXPECT_EQ(resolve({"--max-steps", "10"}).max_steps, 10);
  EXPECT_EQ(resolve({"--max-steps=12"}).max_steps, 12);
  EXPECT_EQ(resolve({"--evaluation_strategy", "epoch"}).eval_strategy, "epoch");
  EXPECT_EQ(resolve({"--seed", "3", "--learning-rate", "1e-4"}).learning_rate, 1e-4);
  EXPECT_EQ(resolve({}).to_json_text(), train::TrainingArguments().to_json_text());
}

TEST(TrainingFlagsTest, BareBooleanFlagMeansTrue) {
  EXPECT_TRUE(resolve({"--overwrite_output_dir"}).overwrite_output_dir);
  EXPECT_FALSE(resolve({"--overwrite-output-dir", "false"}).overwrite_output_dir);
  const auto args = resolve({"--dataloader_drop_last", "--seed", "5"});
  EXPECT_TRUE(args.dataloader_drop_last);
  EXPECT_EQ(args.seed, 5);
}

TEST(TrainingFlagsTest, FlagsOverrideTheArgsFile) {
  berth::testing::TempDir dir;
  {
    std::ofstream out(dir.file("args.json"));
    out << R"({"max_steps": 50, "seed": 9, "learning_rate": 1e-4, "fp16_opt_level": "O1"})";
  }
  std::vector<std::string> warnings;
  const auto args = resolve({"--args", dir.file("args.json"), "--max_steps", "10"}, &warnings);
  EXPECT_EQ(args.max_steps, 10);  // the flag wins
  EXPECT_EQ(args.seed, 9);        // the file's value stays
  EXPECT_EQ(args.learning_rate, 1e-4);
  ASSERT_EQ(warnings.size(), 1u);
  expect_contains(warnings[0], {"fp16_opt_level"});
}

TEST(TrainingFlagsTest, PrecisionAndShardingFlagsComeFromTheRegistry) {
  const auto args = resolve({"--fp16", "--fsdp", "full_shard offload"});
  EXPECT_TRUE(args.fp16);
  EXPECT_FALSE(args.bf16);
  EXPECT_EQ(args.fsdp, "full_shard offload");
  EXPECT_TRUE(resolve({"--bf16"}).bf16);
  EXPECT_EQ(resolve({"--deepspeed", "ds.json"}).deepspeed, std::optional<std::string>("ds.json"));
  expect_contains(error_text([] {
                    resolve({"--fp16", "--bf16"});
                  }),
                  {"invalid training arguments", "fp16 and bf16 are both true"});
  expect_contains(
      error_text([] {
        resolve({"--deepspeed", "ds.json", "--fsdp", "full_shard"});
      }),
      {"invalid training arguments", "deepspeed ('ds.json') and fsdp ('full_shard') are both set"});
}

TEST(TrainingFlagsTest, ErrorsNameTheFlag) {
  expect_contains(error_text([] {
                    resolve({"--max_steps", "ten"});
                  }),
                  {"--max_steps", "a whole number", "'ten'"});
  expect_contains(error_text([] {
                    resolve({"--learning_rat", "1e-4"});
                  }),
                  {"unknown flag --learning_rat", "did you mean --learning_rate?"});
  expect_contains(error_text([] { resolve({"--fp16_full_eval"}); }),
                  {"unknown flag --fp16_full_eval", "HF's training arguments that berth does not implement"});
  expect_contains(error_text([] {
                    resolve({"--adam_beta1", "1.5"});
                  }),
                  {"invalid training arguments", "adam_beta1", "[0, 1)"});
  expect_contains(error_text([] {
                    resolve({"--report_to", "wandb"});
                  }),
                  {"--report_to", "no wandb integration"});
  berth::testing::TempDir dir;
  {
    std::ofstream out(dir.file("bad.json"));
    out << R"({"learning_rate": "fast"})";
  }
  expect_contains(error_text([&] {
                    resolve({"--args", dir.file("bad.json")});
                  }),
                  {"bad.json", "\"learning_rate\" must be a number", "\"fast\""});
}

TEST(TrainingFlagsTest, WorksOnASubcommandAsBerthTrainUsesIt) {
  CLI::App app("berth");
  auto* train = app.add_subcommand("train", "Train");
  TrainingFlags flags;
  add_training_flags(*train, flags);
  std::vector<std::string> argv = {"train", "--max-steps", "7", "--learning_rat", "1"};
  std::reverse(argv.begin(), argv.end());
  app.parse(argv);
  expect_contains(error_text([&] { resolve_training_arguments(flags); }), {"did you mean --learning_rate?"});
  CLI::App app2("berth");
  auto* train2 = app2.add_subcommand("train", "Train");
  TrainingFlags flags2;
  add_training_flags(*train2, flags2);
  std::vector<std::string> argv2 = {"train", "--max-steps", "7"};
  std::reverse(argv2.begin(), argv2.end());
  app2.parse(argv2);
  EXPECT_EQ(resolve_training_arguments(flags2).max_steps, 7);
}

TEST(TrainingFlagsTest, HelpShowsEveryFieldWithItsDefault) {
  CLI::App app("test");
  TrainingFlags flags;
  add_training_flags(app, flags);
  const std::string help = app.help();
  for (const auto& spec : train::training_argument_specs())
    EXPECT_TRUE(berth::testing::contains(help, "--" + spec.name)) << spec.name;
  expect_contains(help, {"--max-steps", "default: -1", "default: 5e-05", "--args"});
}

}  // namespace
}  // namespace berth::cli
