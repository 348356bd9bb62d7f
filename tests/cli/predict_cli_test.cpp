// `berth predict` as users run it: the golden script's tiny HF model dir gives PyTorch's logits, in order.
#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace
