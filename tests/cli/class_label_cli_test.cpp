// Integer labels as HF datasets' ClassLabel indices, through the CLI: `berth eval` and `berth train` of an HF
// checkpoint with named classes (id2label NEGATIVE/POSITIVE) on JSONL files whose labels are 0 and 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli_runner.h"
#include "support/test_support.h"

namespace berth {
namespace {

namespace fs = std::filesystem;
using testing::expect_contains;
using testing::run_cli;
using testing::TempDir;

// The tiny HF classifier with its classes named as a sentiment checkpoint names them.
std::string class_label_checkpoint(const TempDir& dir) {
  const std::string model = dir.file("sentiment");
  fs::copy(testing::tiny_bert_classifier_dir(), model, fs::copy_options::recursive);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(model + "/config.json"));
  config["id2label"] = {{"0", "NEGATIVE"}, {"1", "POSITIVE"}};
  config["label2id"] = {{"NEGATIVE", 0}, {"POSITIVE", 1}};
  std::ofstream(model + "/config.json") << config.dump(2);
  return model;
}

// Rows of the spam-like sentences with their class as an integer or as the checkpoint's name.
std::string class_label_rows(const TempDir& dir, const std::string& name, bool names, int outside = -1) {
  const std::string path = dir.file(name);
  std::ofstream out(path);
  const char* texts[] = {"free prize click here now", "meeting tomorrow review report", "win cash offer",
                         "the build is green team"};
  for (int i = 0; i < 8; ++i) {
    const int label = i == outside ? 2 : i % 2;
    nlohmann::json row = {{"text", texts[i % 4]}};
    row["label"] = names ? nlohmann::json(label ? "POSITIVE" : "NEGATIVE") : nlohmann::json(label);
    out << row.dump() << "\n";
  }
  return path;
}

// The metric and confusion-matrix lines of berth eval's output (timings left out).
std::string class_label_metrics(const std::string& output) {
  std::istringstream lines(output.substr(std::min(output.find("eval metrics"), output.size())));
  std::string kept;
  for (std::string line; std::getline(lines, line);)
    if (line.find("runtime") == std::string::npos && line.find("per_second") == std::string::npos)
      kept += line + "\n";
  return kept;
}

TEST(ClassLabelCli, EvalOfANamedCheckpointReadsIntegerLabelsAsClassIds) {
  TempDir dir;
  const std::string model = class_label_checkpoint(dir);
  const auto ids = run_cli("eval --model " + model + " --test " + class_label_rows(dir, "ids.jsonl", false));
  ASSERT_EQ(ids.exit_code, 0) << ids.output;
  const auto names =
      run_cli("eval --model " + model + " --test " + class_label_rows(dir, "names.jsonl", true));
  ASSERT_EQ(names.exit_code, 0) << names.output;
  EXPECT_EQ(class_label_metrics(ids.output), class_label_metrics(names.output));
  expect_contains(ids.output, {"eval_accuracy", "NEGATIVE", "POSITIVE"});
  const auto outside =
      run_cli("eval --model " + model + " --test " + class_label_rows(dir, "outside.jsonl", false, 5));
  EXPECT_EQ(outside.exit_code, 2);
  expect_contains(outside.output, {"outside.jsonl:6: label 2 is not one of the labels (NEGATIVE, POSITIVE)",
                                   "outside the 2 classes 0..1"});
}

TEST(ClassLabelCli, FineTuningANamedCheckpointOnIntegerLabelsKeepsItsClasses) {
  TempDir dir;
  const std::string model = class_label_checkpoint(dir);
  const std::string out = dir.file("run");
  const auto result =
      run_cli("train --model " + model + " --train " + class_label_rows(dir, "train.jsonl", false) +
              " --eval " + class_label_rows(dir, "eval.jsonl", true) + " --output-dir " + out +
              " --max_steps 2 --save_strategy no --max_length 16");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json config = nlohmann::json::parse(std::ifstream(out + "/config.json"));
  EXPECT_EQ(config.at("id2label"), (nlohmann::json{{"0", "NEGATIVE"}, {"1", "POSITIVE"}}));
  // The fine-tuned model evaluates the integer file as well.
  const auto eval = run_cli("eval --model " + out + " --test " + class_label_rows(dir, "test.jsonl", false));
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
}

}  // namespace
}  // namespace berth
