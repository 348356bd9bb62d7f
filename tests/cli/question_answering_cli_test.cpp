// `berth train|eval|predict --task question-answering` end to end: a tiny random DistilBERT (from the golden
// script) learns to answer "What is the number?" with the only number of generated sentences (some long
// enough for several windows); its SQuAD exact match and F1 end far above the untrained model's, `berth
// eval` reports the same numbers, `berth predict` gives the answer spans; files with broken answers are
// refused with exit 2.
#include "support/cli_runner.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

namespace berth {
namespace {

using testing::expect_contains;
using testing::run_cli;

std::string qa_cli_model() { return testing::golden_dir() + "/question_answering/distilbert_tiny"; }

// One sentence a row around a two-digit number; every fifth context is padded with filler past one window.
void qa_cli_corpus(const std::string& path, int rows, uint32_t seed, bool labeled) {
  const std::vector<std::string> names = {"Anna", "the parcel", "our team", "the old truck", "Mr Brown"};
  const std::vector<std::string> verbs = {"counted", "carried", "painted", "sold", "found"};
  const std::vector<std::string> things = {"apples", "boxes", "chairs", "stones", "letters"};
  std::mt19937 random(seed);
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i) {
    const std::string number = std::to_string(10 + random() % 90);
    const std::string before = names[random() % 5] + " " + verbs[random() % 5] + " ";
    std::string context = before + number + " " + things[random() % 5] + " yesterday.";
    if (i % 5 == 0) context += " Nobody said much about it later, and the weather stayed grey all week long.";
    nlohmann::json row = {
        {"id", "q" + std::to_string(i)}, {"question", "What is the number?"}, {"context", context}};
    if (labeled) row["answers"] = {{"text", {number}}, {"answer_start", {before.size()}}};
    out << row.dump() << "\n";
  }
}

nlohmann::json qa_cli_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
}

TEST(QuestionAnsweringCli, TrainsEvaluatesAndPredicts) {
  testing::TempDir dir;
  qa_cli_corpus(dir.file("train.jsonl"), 400, 1, true);
  qa_cli_corpus(dir.file("eval.jsonl"), 40, 2, true);
  qa_cli_corpus(dir.file("predict.jsonl"), 10, 3, false);
  const std::string windows = " --max-length 24 --doc-stride 6";
  // The untrained model: its answers are anywhere.
  const auto untrained = run_cli("eval --model " + qa_cli_model() + " --eval " + dir.file("eval.jsonl") +
                                 " --split eval" + windows + " --output " + dir.file("untrained.json"));
  ASSERT_EQ(untrained.exit_code, 0) << untrained.output;
  const double untrained_f1 = qa_cli_json(dir.file("untrained.json")).value("eval_f1", NAN);
  EXPECT_LT(untrained_f1, 30.0);

  const std::string out = dir.file("out");
  const auto trained = run_cli("train --model " + qa_cli_model() + " --task question-answering --train " +
                               dir.file("train.jsonl") + " --eval " + dir.file("eval.jsonl") +
                               " --output-dir " + out + windows +
                               " --per-device-train-batch-size 16 --num-train-epochs 6 --learning-rate 3e-3"
                               " --save-strategy no --seed 1");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  expect_contains(trained.output,
                  {"task: question-answering", "400 train questions", "eval_exact_match", "eval_f1"});
  const nlohmann::json metrics = qa_cli_json(out + "/eval_results.json");
  EXPECT_GT(metrics.value("eval_exact_match", NAN), 80.0) << metrics.dump();
  EXPECT_GT(metrics.value("eval_f1", NAN), 80.0) << metrics.dump();
  EXPECT_LT(metrics.value("eval_loss", NAN), 1.0) << metrics.dump();

  // berth eval of the trained directory: the same windows (its training_args.json's max_length), the same
  // numbers.
  const auto evaluated = run_cli("eval --model " + out + " --eval " + dir.file("eval.jsonl") +
                                 " --split eval --doc-stride 6 --output " + dir.file("eval.json"));
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  const nlohmann::json again = qa_cli_json(dir.file("eval.json"));
  EXPECT_NEAR(again.value("eval_f1", NAN), metrics.value("eval_f1", NAN), 1e-9);
  EXPECT_NEAR(again.value("eval_loss", NAN), metrics.value("eval_loss", NAN), 1e-5);

  const auto predicted = run_cli("predict --model " + out + " --input " + dir.file("predict.jsonl") +
                                 " --doc-stride 6 --output " + dir.file("answers.jsonl"));
  ASSERT_EQ(predicted.exit_code, 0) << predicted.output;
  std::ifstream inputs(dir.file("predict.jsonl"));
  std::ifstream answers(dir.file("answers.jsonl"));
  std::string input_line, answer_line;
  int right = 0, rows = 0;
  while (std::getline(inputs, input_line) && std::getline(answers, answer_line)) {
    const auto input = nlohmann::json::parse(input_line);
    const auto answer = nlohmann::json::parse(answer_line);
    ++rows;
    EXPECT_EQ(answer.at("id"), input.at("id"));
    const std::string context = input.at("context");  // ASCII: characters are bytes
    const auto start = answer.at("start").get<size_t>();
    const auto end = answer.at("end").get<size_t>();
    ASSERT_LE(start, end);
    EXPECT_EQ(context.substr(start, end - start), answer.at("answer").get<std::string>());
    EXPECT_GT(answer.at("score").get<double>(), 0.0);
    right += answer.at("answer").get<std::string>().size() == 2 && std::isdigit(context[start]);
  }
  EXPECT_EQ(rows, 10);
  EXPECT_GE(right, 8);
}

TEST(QuestionAnsweringCli, RefusesBrokenAnswers) {
  testing::TempDir dir;
  const std::string base = "train --model " + qa_cli_model() + " --task question-answering --output-dir " +
                           dir.file("out") + " --max-length 32 --train ";
  std::ofstream(dir.file("no_start.jsonl"))
      << R"({"id": "a", "question": "Q?", "context": "It is 42.", "answers": {"text": ["42"]}})"
      << "\n";
  auto result = run_cli(base + dir.file("no_start.jsonl"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  expect_contains(result.output, {"no_start.jsonl:1", "no answer_start", "Fix:"});
  std::ofstream(dir.file("moved.jsonl"))
      << R"({"id": "a", "question": "Q?", "context": "It is 42.", "answers": {"text": ["42"], "answer_start": [3]}})"
      << "\n";
  result = run_cli(base + dir.file("moved.jsonl"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  expect_contains(result.output, {"moved.jsonl:1", "\"42\" is not at answer_start 3", "Fix:"});
  result = run_cli(base + dir.file("moved.jsonl") + " --data spamassassin");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  expect_contains(result.output, {"text classification set", "Fix: --train FILE"});
}

}  // namespace
}  // namespace berth
