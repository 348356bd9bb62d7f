// `berth predict` as users run it: the golden script's tiny HF model dir gives PyTorch's logits, in order.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli_runner.h"
#include "support/test_support.h"

namespace {

using berth::testing::run_cli;

const std::string kPredictCliModel = berth::testing::golden_dir() + "/tiny_bert_classifier";
const std::string kInput = berth::testing::golden_dir() + "/tiny_bert_classifier_predict/input.jsonl";
const std::string kExpected = berth::testing::golden_dir() + "/tiny_bert_classifier_predict/expected.jsonl";

std::vector<nlohmann::json> json_lines(std::istream& in) {
  std::vector<nlohmann::json> lines;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

std::vector<nlohmann::json> json_lines_of_text(const std::string& text) {
  std::istringstream in(text);
  return json_lines(in);
}

std::vector<nlohmann::json> json_lines_of_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path << " is missing: the goldens are generated at build time";
  return json_lines(in);
}

void predict_cli_expect_close(const nlohmann::json& got, const nlohmann::json& want,
                              const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i].get<double>(), want[i].get<double>(), 1e-5) << what << "[" << i << "]";
}

void expect_golden(const std::vector<nlohmann::json>& got) {
  std::vector<nlohmann::json> want = json_lines_of_file(kExpected);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i]["label"], want[i]["label"]) << "line " << i + 1;
    EXPECT_FALSE(got[i].contains("labels")) << "a single-label classifier prints no label list";
    predict_cli_expect_close(got[i]["logits"], want[i]["logits"], "logits of line " + std::to_string(i + 1));
    predict_cli_expect_close(got[i]["probabilities"], want[i]["probabilities"],
                             "probabilities of line " + std::to_string(i + 1));
  }
}

TEST(PredictCli, GivesTheGoldenLogitsInInputOrder) {
  auto result =
      run_cli("predict --model " + kPredictCliModel + " --input " + kInput + " --device cpu", false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_golden(json_lines_of_text(result.output));
}

TEST(PredictCli, BatchSizeDoesNotChangeResultsAndOutputFileIsWritten) {
  berth::testing::TempDir dir;
  auto result = run_cli("predict --model " + kPredictCliModel + " --input " + kInput +
                        " --batch-size 2 --output " + dir.file("out.jsonl"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(berth::testing::contains(result.output, "predictions ->")) << result.output;
  expect_golden(json_lines_of_file(dir.file("out.jsonl")));
}

TEST(PredictCli, TokenizesAsTheGoldenScriptDid) {
  // Special tokens sit at unusual ids in this vocab ([CLS]=5, [SEP]=6): found by their text, not assumed.
  auto result = run_cli("tokenize --tokenizer " + kPredictCliModel + " --input " + kInput, false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::vector<nlohmann::json> got = json_lines_of_text(result.output);
  std::vector<nlohmann::json> want = json_lines_of_file(kExpected);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i]["input_ids"], want[i]["input_ids"]) << "line " << i + 1;
    EXPECT_EQ(got[i]["token_type_ids"], want[i]["token_type_ids"]) << "line " << i + 1;
  }
}

TEST(PredictCli, ABadInputLineIsNamedByFileAndLine) {
  berth::testing::TempDir dir;
  std::ofstream(dir.file("in.jsonl")) << "{\"text\": \"fine\"}\n{\"txt\": \"typo\"}\n";
  auto result = run_cli("predict --model " + kPredictCliModel + " --input " + dir.file("in.jsonl"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  berth::testing::expect_contains(result.output,
                                  {dir.file("in.jsonl") + ":2", "expected an object with a string \"text\""});
}

TEST(PredictCli, AModelDirWithoutWeightsSaysWhatIsMissing) {
  berth::testing::TempDir dir;
  std::ofstream(dir.file("in.jsonl")) << "{\"text\": \"fine\"}\n";
  auto result = run_cli("predict --model " + dir.path().string() + " --input " + dir.file("in.jsonl"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_TRUE(berth::testing::contains(result.output, dir.path().string())) << result.output;
}

TEST(PredictCli, ZeroBatchSizeIsRefusedWithTheFix) {
  auto result = run_cli("predict --model " + kPredictCliModel + " --input " + kInput + " --batch-size 0");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_TRUE(berth::testing::contains(result.output, "--batch-size must be at least 1")) << result.output;
}

// A multi-label classifier (the same weights, config.json's problem_type changed) prints sigmoid
// probabilities and the list of labels over 0.5, which may be empty; a single-label one prints no list (the
// test above).
TEST(PredictCli, AMultiLabelClassifierPrintsEveryLabelOverOneHalf) {
  berth::testing::TempDir dir;
  const std::filesystem::path model = dir.path() / "multi";
  std::filesystem::copy(kPredictCliModel, model);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(model / "config.json"));
  config["problem_type"] = "multi_label_classification";
  std::ofstream(model / "config.json") << config.dump(2);
  auto result = run_cli("predict --model " + model.string() + " --input " + kInput, false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::vector<nlohmann::json> got = json_lines_of_text(result.output);
  ASSERT_FALSE(got.empty());
  for (const nlohmann::json& line : got) {
    ASSERT_TRUE(line.contains("labels")) << line.dump();
    std::vector<std::string> over_half;
    for (size_t i = 0; i < line["logits"].size(); ++i) {
      const double probability = 1.0 / (1.0 + std::exp(-line["logits"][i].get<double>()));
      EXPECT_NEAR(line["probabilities"][i].get<double>(), probability, 1e-6) << line.dump();
      if (probability > 0.5) over_half.push_back(config["id2label"][std::to_string(i)].get<std::string>());
    }
    EXPECT_EQ(line["labels"].get<std::vector<std::string>>(), over_half) << line.dump();
  }
}

}  // namespace
