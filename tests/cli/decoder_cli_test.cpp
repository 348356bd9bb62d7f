// Decoders through the CLI (tests/goldens/decoder_cli_goldens.py): `berth eval --task causal-lm` gives HF's
// evaluation-loop loss for GPT-2 and Llama on padded batches of emails, `berth predict` their classifiers'
// logits, and a preset trains from scratch on packed blocks and generates.
#include "support/cli_runner.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace berth {
namespace {

using testing::run_cli;

std::string decoder_cli_dir(const std::string& name) {
  return testing::golden_dir() + "/decoder_cli/" + name;
}

nlohmann::json decoder_cli_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "no " << path << ". Fix: build the berth_goldens target (scripts/setup first)";
  return in ? nlohmann::json::parse(in) : nlohmann::json::object();
}

class DecoderCliFamily : public ::testing::TestWithParam<std::string> {};

TEST_P(DecoderCliFamily, EvalGivesHfsCausalLmLoss) {
  const std::string model = decoder_cli_dir(GetParam() + "_causal_lm");
  const auto expected = decoder_cli_json(model + "/expected.json");
  testing::TempDir dir;
  const auto result =
      run_cli("eval --model " + model + " --task causal-lm --eval " + decoder_cli_dir("eval.jsonl") +
              " --split eval --batch-size " + expected.at("batch_size").dump() + " --max-length " +
              expected.at("max_length").dump() + " --output " + dir.file("metrics.json"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto metrics = decoder_cli_json(dir.file("metrics.json"));
  const double loss = metrics.at("eval_loss").get<double>();
  EXPECT_NEAR(loss, expected.at("model_loss").get<double>(), 1e-4);
  // Where HF's Trainer counts the loss's tokens right (Llama), its eval_loss is the same number; for GPT-2 it
  // divides by one token more per row (see decoder_cli_goldens.py) and reports less.
  if (GetParam() == "llama") EXPECT_NEAR(loss, expected.at("trainer_eval_loss").get<double>(), 1e-4);
  if (GetParam() == "gpt2") EXPECT_LT(expected.at("trainer_eval_loss").get<double>(), loss - 1e-3);
  EXPECT_NEAR(metrics.at("eval_perplexity").get<double>(), std::exp(metrics.at("eval_loss").get<double>()),
              1e-6 * metrics.at("eval_perplexity").get<double>());
}

TEST_P(DecoderCliFamily, PredictGivesHfClassifierLogits) {
  const std::string model = decoder_cli_dir(GetParam() + "_sequence_classification");
  const auto expected = decoder_cli_json(model + "/expected.json").at("logits");
  const auto result = run_cli("predict --model " + model + " --input " + decoder_cli_dir("eval.jsonl") +
                                  " --batch-size 3 --max-length 32",
                              false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::istringstream lines(result.output);
  size_t row = 0;
  for (std::string line; std::getline(lines, line) && row < 100; ++row) {
    ASSERT_LT(row, expected.size()) << line;
    const auto logits = nlohmann::json::parse(line).at("logits");
    ASSERT_EQ(logits.size(), expected[row].size());
    for (size_t i = 0; i < logits.size(); ++i)
      EXPECT_NEAR(logits[i].get<double>(), expected[row][i].get<double>(), 1e-5) << "row " << row;
  }
  EXPECT_EQ(row, expected.size());
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderCliFamily, ::testing::Values("gpt2", "llama"));

TEST(DecoderCli, PresetTrainsOnPackedBlocksAndGenerates) {
  testing::TempDir dir;
  const std::string out = dir.file("run");
  const auto trained =
      run_cli("train --model-preset llama-tiny --tokenizer " + decoder_cli_dir("gpt2_causal_lm") +
              " --task causal-lm --train " + decoder_cli_dir("eval.jsonl") + " --eval " +
              decoder_cli_dir("eval.jsonl") + " --output-dir " + out +
              " --block-size 16 --per-device-train-batch-size 4 --num-train-epochs 6" +
              " --learning-rate 3e-3 --save-strategy no");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  testing::expect_contains(trained.output,
                           {"task: causal-lm", "packed into blocks of 16 tokens", "eval_perplexity"});
  // Learnt from the emails it is evaluated on: far below the uniform guess over the 400-token vocabulary.
  EXPECT_LT(decoder_cli_json(out + "/eval_results.json").at("eval_perplexity").get<double>(), 100.0);
  std::ofstream(dir.file("prompt.jsonl")) << R"({"text": "From: "})"
                                          << "\n";
  const auto generated = run_cli(
      "predict --model " + out + " --input " + dir.file("prompt.jsonl") + " --max-new-tokens 8", false);
  ASSERT_EQ(generated.exit_code, 0) << generated.output;
  const auto json = nlohmann::json::parse(generated.output);
  EXPECT_EQ(json.at("generated_ids").size(), 8u) << generated.output;
}

}  // namespace
}  // namespace berth
