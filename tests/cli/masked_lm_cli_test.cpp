// `berth train --task masked-lm`: masked-LM pretraining from a preset, evaluated the same by `berth eval`,
// and its output directory fine-tuned into a classifier (pretrain, then fine-tune).
#include "support/cli_runner.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

namespace berth {
namespace {

using testing::expect_contains;
using testing::run_cli;

void masked_lm_cli_texts(const std::string& path, int rows) {
  const std::vector<std::string> spam = {"free prize click here now", "win cash offer today"};
  const std::vector<std::string> ham = {"meeting tomorrow review the report", "the build is green again"};
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i) {
    const bool is_spam = i % 2 == 0;
    out << nlohmann::json{{"text", (is_spam ? spam : ham)[(i / 2) % 2]}, {"label", is_spam ? "spam" : "ham"}}
               .dump()
        << "\n";
  }
}

double masked_lm_cli_metric(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << file;
  return in ? nlohmann::json::parse(in).at(key).get<double>() : NAN;
}

TEST(MaskedLmCli, PretrainsEvaluatesAndFineTunes) {
  testing::TempDir dir;
  masked_lm_cli_texts(dir.file("train.jsonl"), 64);
  masked_lm_cli_texts(dir.file("eval.jsonl"), 16);
  const std::string tokenizer = testing::bert_base_uncased_dir();
  const std::string mlm = dir.file("mlm");
  const auto pretrain =
      run_cli("train --model-preset bert-tiny --tokenizer " + tokenizer + " --task masked-lm --train " +
              dir.file("train.jsonl") + " --eval " + dir.file("eval.jsonl") + " --output-dir " + mlm +
              " --max-length 16 --per-device-train-batch-size 16 --num-train-epochs 8 --learning-rate 2e-3"
              " --save-strategy no");
  ASSERT_EQ(pretrain.exit_code, 0) << pretrain.output;
  expect_contains(pretrain.output, {"task: masked-lm", "eval_perplexity"});
  // Four sentences over a 30522-token vocabulary: the masked words become predictable (an untrained head
  // scores about ln 30522 = 10.3).
  const double loss = masked_lm_cli_metric(mlm + "/eval_results.json", "eval_loss");
  EXPECT_LT(loss, 5.0);

  // `berth eval` in batches of 8 (training's --per-device-eval-batch-size) masks the same tokens (the default
  // seed's masks, the default 15%) and reports the same loss.
  const auto evaluated =
      run_cli("eval --model " + mlm + " --task masked-lm --eval " + dir.file("eval.jsonl") +
              " --split eval --batch-size 8 --output " + dir.file("eval.json"));
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  EXPECT_NEAR(masked_lm_cli_metric(dir.file("eval.json"), "eval_loss"), loss, 1e-5);
  // Whole-word masks: other tokens are masked (another loss), the same ones again for the same seed.
  const std::string whole_words = "eval --model " + mlm + " --task masked-lm --eval " +
                                  dir.file("eval.jsonl") +
                                  " --split eval --whole-word-mask --mlm-probability 0.3 --output ";
  ASSERT_EQ(run_cli(whole_words + dir.file("w1.json")).exit_code, 0);
  ASSERT_EQ(run_cli(whole_words + dir.file("w2.json")).exit_code, 0);
  ASSERT_EQ(run_cli(whole_words + dir.file("w3.json") + " --seed 7").exit_code, 0);
  const double w1 = masked_lm_cli_metric(dir.file("w1.json"), "eval_loss");
  EXPECT_EQ(w1, masked_lm_cli_metric(dir.file("w2.json"), "eval_loss"));
  EXPECT_NE(w1, masked_lm_cli_metric(dir.file("w3.json"), "eval_loss"));
  EXPECT_NE(w1, loss);

  // The pretrained encoder under a new classification head.
  const auto tuned =
      run_cli("train --model " + mlm + " --task sequence-classification --train " + dir.file("train.jsonl") +
              " --eval " + dir.file("eval.jsonl") + " --output-dir " + dir.file("cls") +
              " --max-length 16 --max-steps 4 --save-strategy no");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  expect_contains(tuned.output, {"task: sequence-classification", "classifier.weight", "eval_accuracy"});
}

TEST(MaskedLmCli, RefusesWhatItCannotTrain) {
  testing::TempDir dir;
  masked_lm_cli_texts(dir.file("train.jsonl"), 8);
  const std::string base = "train --model-preset bert-tiny --tokenizer " + testing::bert_base_uncased_dir() +
                           " --train " + dir.file("train.jsonl") + " --output-dir " + dir.file("out");
  // Texts are not words and tags: token classification names the column and the fix.
  auto result = run_cli(base + " --task token-classification");
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output,
                  {"train.jsonl:1", "missing \"tokens\" (found keys: label, text)",
                   "Fix: name the words and tags columns with --text-column / --label-column"});
  result = run_cli(base + " --task masked-lm --mlm-probability 1.5");
  EXPECT_NE(result.exit_code, 0);
  expect_contains(result.output, {"--mlm-probability"});
}

}  // namespace
}  // namespace berth
