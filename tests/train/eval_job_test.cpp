// run_eval_job and run_predict_job, the library entries of `berth eval` and `berth predict`, on the goldens'
// tiny question-answering DistilBERT: the metrics returned are those printed and written, the answers go to
// the stream or the file, and bad options are refused before any model loads.
#include "berth/train/eval_job.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "berth/train/predict_job.h"
#include "support/test_support.h"

namespace berth {
namespace {

std::string eval_job_qa_model() { return testing::golden_dir() + "/question_answering/distilbert_tiny"; }

// Questions about the only number of a sentence; every third context spans several windows.
void write_eval_job_questions(const std::string& path, int rows, bool labeled) {
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i) {
    const std::string before = i % 2 == 0 ? "Anna counted " : "our team sold ";
    const std::string number = std::to_string(10 + (7 * i) % 90);
    std::string context = before + number + " apples yesterday.";
    if (i % 3 == 0) context += " Nobody said much about it later, and the weather stayed grey all week long.";
    nlohmann::json row = {
        {"id", "q" + std::to_string(i)}, {"question", "What is the number?"}, {"context", context}};
    if (labeled) row["answers"] = {{"text", {number}}, {"answer_start", {before.size()}}};
    out << row.dump() << "\n";
  }
}

TEST(EvalJob, ReturnsTheMetricsItPrintsAndWrites) {
  testing::TempDir dir;
  write_eval_job_questions(dir.file("eval.jsonl"), 6, true);
  train::EvalJobOptions options;
  options.model = eval_job_qa_model();
  options.data.eval = dir.file("eval.jsonl");
  options.max_length = 24;
  options.output = dir.file("metrics.json");
  std::ostringstream out;
  const auto metrics = train::run_eval_job(options, out);
  testing::expect_contains(out.str(), {"eval metrics (6 questions, ", "eval_f1", "eval_exact_match"});
  ASSERT_TRUE(metrics.count("eval_f1") && metrics.count("eval_loss"));
  std::ifstream written(options.output);
  const nlohmann::json json = nlohmann::json::parse(written);
  EXPECT_EQ(json.size(), metrics.size());
  for (const auto& [name, value] : metrics) EXPECT_DOUBLE_EQ(json.value(name, -1.0), value) << name;
}

TEST(EvalJob, RefusesABadBatchSizeBeforeLoadingTheModel) {
  train::EvalJobOptions options;
  options.model = "/nonexistent/model";
  options.batch_size = 0;
  std::ostringstream out;
  EXPECT_EQ(testing::error_text([&] { train::run_eval_job(options, out); }),
            "eval: --batch-size must be at least 1, found 0. Fix: --batch-size 32");
}

TEST(PredictJob, WritesAnswersToTheStreamOrTheFile) {
  testing::TempDir dir;
  write_eval_job_questions(dir.file("questions.jsonl"), 4, false);
  train::PredictJobOptions options;
  options.model = eval_job_qa_model();
  options.input = dir.file("questions.jsonl");
  options.predictor.max_length = 24;
  std::ostringstream out, log;
  EXPECT_EQ(train::run_predict_job(options, out, log), 4u);
  std::istringstream lines(out.str());
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count)
    EXPECT_EQ(nlohmann::json::parse(line).value("id", ""), "q" + std::to_string(count));
  EXPECT_EQ(count, 4);
  EXPECT_EQ(log.str(), "");

  options.output = dir.file("answers.jsonl");
  std::ostringstream out_with_file, file_log;
  EXPECT_EQ(train::run_predict_job(options, out_with_file, file_log), 4u);
  EXPECT_EQ(out_with_file.str(), "");
  EXPECT_EQ(file_log.str(), "predict: 4 answers -> " + options.output + "\n");
  std::ifstream file(options.output);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(), out.str());
}

}  // namespace
}  // namespace berth
