// `berth train`, `berth eval` and `berth data` as users run them: outputs on disk, predict on the result,
// errors that name the flag and the fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_support.h"

namespace berth {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::expect_contains;
using testing::run_cli;
using testing::TempDir;

const std::string kTinyModel = testing::golden_dir() + "/tiny_bert_classifier";

// Ham and spam sentences from words the tiny model's vocabulary knows (letters at worst).
void write_split(const std::string& path, int rows, int offset) {
  const std::vector<std::string> spam = {"free prize click here now", "win cash offer",
                                         "cheap loans click now"};
  const std::vector<std::string> ham = {"meeting tomorrow review report", "the build is green team",
                                        "please review the attached report"};
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i) {
    const bool is_spam = (i + offset) % 2 == 0;
    const auto& pool = is_spam ? spam : ham;
    out << nlohmann::json{{"text", pool[(i + offset) % pool.size()]}, {"label", is_spam ? "spam" : "ham"}}
               .dump()
        << "\n";
  }
}

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    write_split(dir.file("train.jsonl"), 32, 0);
    write_split(dir.file("eval.jsonl"), 8, 1);
    write_split(dir.file("test.jsonl"), 8, 2);
  }
  std::string data_flags() const {
    return " --train " + dir.file("train.jsonl") + " --eval " + dir.file("eval.jsonl") + " --test " +
           dir.file("test.jsonl");
  }
  TempDir dir;
};

TEST_F(TrainCli, FineTunesEvaluatesAndWritesAnHfModelDirectory) {
  const std::string out = dir.file("run");
  const auto result =
      run_cli("train --model " + kTinyModel + data_flags() + " --output-dir " + out +
              " --max_steps 6 --logging-steps 2 --save_strategy steps --save-steps 3 "
              "--eval_strategy steps --eval_steps 3 --max_length 32 --learning_rate 1e-3 --seed 3");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_FALSE(contains(result.output, "\r")) << "not a terminal: plain lines only";
  expect_contains(result.output, {"test_accuracy", "test confusion matrix", "report.html"});
  for (const char* file : {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json",
                           "report.html", "log.jsonl", "training_args.json", "trainer_state.json",
                           "train_results.json", "eval_results.json", "test_results.json", "all_results.json",
                           "checkpoint-3/model.safetensors", "checkpoint-6/optimizer.safetensors"})
    EXPECT_TRUE(fs::exists(out + "/" + file)) << file;
  std::ifstream test_results(out + "/test_results.json");
  const auto json = nlohmann::json::parse(test_results);
  for (const char* key : {"test_accuracy", "test_f1", "test_loss"}) EXPECT_TRUE(json.contains(key)) << key;

  // The output directory is a model `berth predict` and `berth eval` take.
  const auto predicted = run_cli("predict --model " + out + " --input " + dir.file("test.jsonl"), false);
  ASSERT_EQ(predicted.exit_code, 0) << predicted.output;
  EXPECT_EQ(std::count(predicted.output.begin(), predicted.output.end(), '\n'), 8);
  const auto evaluated = run_cli("eval --model " + out + " --test " + dir.file("test.jsonl"));
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  expect_contains(evaluated.output, {"eval_accuracy", "confusion matrix"});

  // Resume from the first checkpoint with the same arguments: the run continues to its max_steps.
  const std::string same_args =
      " --max_steps 6 --logging-steps 2 --save_strategy steps --save-steps 3 "
      "--eval_strategy steps --eval_steps 3 --max_length 32 --learning_rate 1e-3 --seed 3";
  const auto resumed = run_cli("train --model " + kTinyModel + data_flags() + " --output-dir " + out +
                               same_args + " --resume_from_checkpoint " + out + "/checkpoint-3");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  expect_contains(resumed.output, {"Resumed at step 3", "step 6/6"});
  // Resuming under another schedule would jump the learning rate: refused, naming the difference.
  const auto changed = run_cli("train --model " + kTinyModel + data_flags() + " --output-dir " + out +
                               " --max_steps 6 --max_length 32 --resume_from_checkpoint latest");
  EXPECT_EQ(changed.exit_code, 2);
  expect_contains(changed.output, {"base_lr is 0.001 in the saved state", "--learning_rate"});
}

TEST_F(TrainCli, TrainsAPresetFromScratch) {
  const auto result =
      run_cli("train --model-preset bert-tiny --tokenizer " + kTinyModel +
              " --config-overrides max_position_embeddings=64" + data_flags() + " --output-dir " +
              dir.file("scratch") + " --max-steps 2 --save-strategy no --max-length 32");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream config(dir.file("scratch/config.json"));
  const auto json = nlohmann::json::parse(config);
  EXPECT_EQ(json.at("hidden_size"), 128);
  EXPECT_EQ(json.at("max_position_embeddings"), 64);
  EXPECT_EQ(json.at("id2label").at("1"), "spam");
}

TEST_F(TrainCli, BadInputNamesTheFlagAndTheFix) {
  const std::string base = "train --model " + kTinyModel + data_flags() + " --output-dir " + dir.file("bad");
  auto result = run_cli(base + " --learning_rate -1");
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output, {"learning_rate", "-1"});

  result =
      run_cli("train --model " + kTinyModel + " --model-preset bert-tiny" + data_flags() + " --output-dir x");
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output, {"exactly one of --model DIR", "--model-preset"});

  result = run_cli("train --model-preset bert-tiny" + data_flags() + " --output-dir x");
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output, {"needs a tokenizer", "berth tokenizer train"});

  result = run_cli(base + " --config-overrides num_hidden_layers=2");
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output, {"--config-overrides applies to --model-preset only"});

  result = run_cli(base + " --max_length 100");
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output, {"max_position_embeddings (64)"});
  EXPECT_FALSE(fs::exists(dir.file("bad/checkpoint-1")));
}

TEST(DataCli, WritesTheSpamAssassinSplit) {
  TempDir dir;
  const auto result = run_cli("data spamassassin --output " + dir.file("split"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  size_t total = 0;
  for (const char* name : {"train.jsonl", "validation.jsonl", "test.jsonl"}) {
    std::ifstream in(dir.file("split/" + std::string(name)));
    std::string line;
    size_t lines = 0;
    while (std::getline(in, line)) {
      ++lines;
      const auto json = nlohmann::json::parse(line);
      EXPECT_TRUE(json.at("label") == "ham" || json.at("label") == "spam");
    }
    EXPECT_GT(lines, 0u) << name;
    total += lines;
  }
  expect_contains(result.output, {"SpamAssassin (" + std::to_string(total) + " emails"});
}

}  // namespace
}  // namespace berth
