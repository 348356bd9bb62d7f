// ModernBERT through the CLI (tests/goldens/modernbert_cli_goldens.py): `berth predict` gives HF's logits for
// a tiny ModernBERT classifier on padded batches, and `berth train` fine-tunes it and writes a model that
// predicts again.
#include "support/cli_runner.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace berth {
namespace {

using testing::run_cli;

std::string modernbert_cli_path(const std::string& name) {
  return testing::golden_dir() + "/modernbert_cli/" + name;
}

nlohmann::json modernbert_cli_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "no " << path << ". Fix: build the berth_goldens target (scripts/setup first)";
  return in ? nlohmann::json::parse(in) : nlohmann::json::object();
}

// `berth predict`'s output: one {"logits": [...]} line per input line.
std::vector<nlohmann::json> modernbert_predictions(const std::string& output) {
  std::vector<nlohmann::json> rows;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line) && rows.size() < 1000;)
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

TEST(ModernBertCli, PredictGivesHfLogitsOnPaddedBatches) {
  const auto expected = modernbert_cli_json(modernbert_cli_path("expected.json")).at("logits");
  // Batches of 3 pad differently from the golden's one batch of 16: mean pooling and the masks must ignore
  // it.
  const auto result = run_cli("predict --model " + modernbert_cli_path("model") + " --input " +
                                  modernbert_cli_path("data.jsonl") + " --batch-size 3 --max-length 32",
                              false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto rows = modernbert_predictions(result.output);
  ASSERT_EQ(rows.size(), expected.size()) << result.output;
  for (size_t row = 0; row < rows.size(); ++row) {
    const auto logits = rows[row].at("logits");
    ASSERT_EQ(logits.size(), expected[row].size());
    for (size_t i = 0; i < logits.size(); ++i)
      EXPECT_NEAR(logits[i].get<double>(), expected[row][i].get<double>(), 1e-5) << "row " << row;
  }
}

TEST(ModernBertCli, TrainFineTunesAndTheOutputPredicts) {
  testing::TempDir dir;
  const std::string out = dir.file("run");
  const std::string data = modernbert_cli_path("data.jsonl");
  const auto trained =
      run_cli("train --model " + modernbert_cli_path("model") + " --task sequence-classification --train " +
              data + " --eval " + data + " --output-dir " + out +
              " --num-train-epochs 8 --per-device-train-batch-size 4 --learning-rate 3e-3" +
              " --max-length 32 --save-strategy no --seed 3");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const auto eval = modernbert_cli_json(out + "/eval_results.json");
  // Two sentence pools, eight sentences: the tiny model learns them (chance is 0.5).
  EXPECT_GE(eval.at("eval_accuracy").get<double>(), 0.9) << trained.output;
  const auto config = modernbert_cli_json(out + "/config.json");
  EXPECT_EQ(config.at("architectures"), nlohmann::json::array({"ModernBertForSequenceClassification"}));
  EXPECT_EQ(config.at("model_type"), "modernbert");

  const auto predicted = run_cli("predict --model " + out + " --input " + data, false);
  ASSERT_EQ(predicted.exit_code, 0) << predicted.output;
  EXPECT_EQ(modernbert_predictions(predicted.output).size(), 16u);
}

}  // namespace
}  // namespace berth
