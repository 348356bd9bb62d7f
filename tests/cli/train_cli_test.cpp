// `berth train`, `berth eval` and `berth data` as users run them: outputs on disk, predict on the result,
// errors that name the flag and the fix.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli_runner.h"
#include "support/test_support.h"

namespace berth {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::expect_contains;
using testing::run_cli;
using testing::TempDir;

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
      run_cli("train --model " + testing::tiny_bert_classifier_dir() + data_flags() + " --output-dir " + out +
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
  const auto resumed =
      run_cli("train --model " + testing::tiny_bert_classifier_dir() + data_flags() + " --output-dir " + out +
              same_args + " --resume_from_checkpoint " + out + "/checkpoint-3");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  expect_contains(resumed.output, {"Resumed at step 3", "step 6/6"});
  // Resuming under another schedule would jump the learning rate: refused, naming the difference.
  const auto changed =
      run_cli("train --model " + testing::tiny_bert_classifier_dir() + data_flags() + " --output-dir " + out +
              " --max_steps 6 --max_length 32 --resume_from_checkpoint latest");
  EXPECT_EQ(changed.exit_code, 2);
  expect_contains(changed.output, {"base_lr is 0.001 in the saved state", "--learning_rate"});
}

// Logits of `berth predict` for each line of `input`.
std::vector<nlohmann::json> predicted_logits(const std::string& model, const std::string& input) {
  const auto result = run_cli("predict --model " + model + " --input " + input, false);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  std::vector<nlohmann::json> logits;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] == '{') logits.push_back(nlohmann::json::parse(line).at("logits"));
  return logits;
}

TEST_F(TrainCli, HeadTailTruncationIsSavedAndUsedByPredictAndEval) {
  const std::string out = dir.file("head_tail");
  const auto result =
      run_cli("train --model " + testing::tiny_bert_classifier_dir() + data_flags() + " --output-dir " + out +
              " --max_steps 2 --save_strategy no --max_length 10 --truncation_keep_head 3");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_contains(result.output, {"max_length 10, head+tail: the first 3 tokens and the last 5"});
  std::ifstream saved(out + "/training_args.json");
  EXPECT_EQ(nlohmann::json::parse(saved).at("truncation_keep_head"), 3);

  // One token per word in this vocabulary: 14 tokens, of which 8 fit between [CLS] and [SEP].
  const std::string long_text =
      "free prize click here now win cash offer meeting tomorrow review report team build";
  const std::string head_tail = "free prize click tomorrow review report team build";
  const std::string head_only = "free prize click here now win cash offer";
  {
    std::ofstream input(dir.file("long.jsonl"));
    for (const std::string& text : {long_text, head_tail, head_only})
      input << nlohmann::json{{"text", text}, {"label", "spam"}}.dump() << "\n";
  }
  const auto logits = predicted_logits(out, dir.file("long.jsonl"));
  ASSERT_EQ(logits.size(), 3u);
  // Rows of one batch may round differently in the GEMM's edge blocks: equal within 1e-5.
  auto difference = [&](size_t a, size_t b) {
    double worst = 0;
    for (size_t k = 0; k < logits[a].size(); ++k)
      worst = std::max(worst, std::abs(logits[a][k].get<double>() - logits[b][k].get<double>()));
    return worst;
  };
  EXPECT_LT(difference(0, 1), 1e-5) << "predict cuts a long text as training did: its head and its tail";
  EXPECT_GT(difference(0, 2), 1e-3) << "and not its head alone";

  // berth eval reads the same: the long text and its head+tail cut give the same loss.
  std::string evaluated[2];
  for (int i = 0; i < 2; ++i) {
    const std::string file = dir.file("eval" + std::to_string(i) + ".jsonl");
    std::ofstream(file) << nlohmann::json{{"text", i == 0 ? long_text : head_tail}, {"label", "spam"}}.dump()
                        << "\n";
    const auto run = run_cli("eval --model " + out + " --test " + file);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    evaluated[i] = run.output.substr(run.output.find("eval_loss"));
    evaluated[i] = evaluated[i].substr(0, evaluated[i].find('\n'));
  }
  EXPECT_EQ(evaluated[0], evaluated[1]);
}

TEST_F(TrainCli, TrainsAPresetFromScratch) {
  const auto result =
      run_cli("train --model-preset bert-tiny --tokenizer " + testing::tiny_bert_classifier_dir() +
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
  const std::string base = "train --model " + testing::tiny_bert_classifier_dir() + data_flags() +
                           " --output-dir " + dir.file("bad");
  auto result = run_cli(base + " --learning_rate -1");
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output, {"learning_rate", "-1"});

  result = run_cli("train --model " + testing::tiny_bert_classifier_dir() + " --model-preset bert-tiny" +
                   data_flags() + " --output-dir x");
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
