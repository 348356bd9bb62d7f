// `berth train|eval|predict --task token-classification` end to end: a tiny BERT learns a tagging rule
// (numbers -> B-NUM/I-NUM, names -> B-CAP), its seqeval F1 far above an untrained head's, `berth eval`
// reports the same numbers, `berth predict` labels words with offsets; and the refusals, with exit 2.
#include "support/cli_runner.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <random>

namespace berth {
namespace {

using testing::expect_contains;
using testing::run_cli;

// Sentences of filler words, names and one- or two-word numbers; tags by the rule above.
void tagging_cli_corpus(const std::string& path, int rows, unsigned seed) {
  const std::vector<std::string> filler = {"the", "cat", "sat", "on", "a", "mat", "and", "paid", "in", "we"};
  const std::vector<std::string> names = {"Alice", "Paris", "Bob", "London"};
  const std::vector<std::string> numbers = {"12", "345", "7", "99"};
  const std::vector<std::string> thousands = {"000", "500"};  // a number's second word: "12 000"
  std::mt19937 rng(seed);
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i) {
    nlohmann::json words = nlohmann::json::array(), tags = nlohmann::json::array();
    const int length = 4 + static_cast<int>(rng() % 6);
    for (int w = 0; w < length; ++w) {
      const unsigned kind = rng() % 5;
      if (kind == 0) {
        words.push_back(names[rng() % names.size()]), tags.push_back("B-CAP");
      } else if (kind == 1) {
        words.push_back(numbers[rng() % numbers.size()]), tags.push_back("B-NUM");
        if (rng() % 2) words.push_back(thousands[rng() % thousands.size()]), tags.push_back("I-NUM");
      } else {
        words.push_back(filler[rng() % filler.size()]), tags.push_back("O");
      }
    }
    out << nlohmann::json{{"tokens", words}, {"ner_tags", tags}}.dump() << "\n";
  }
}

nlohmann::json tagging_cli_json(const std::string& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << file;
  return in ? nlohmann::json::parse(in) : nlohmann::json::object();
}

std::string tagging_cli_train(const testing::TempDir& dir, const std::string& out, const std::string& extra) {
  return "train --model-preset bert-tiny --tokenizer " + testing::bert_base_uncased_dir() +
         " --task token-classification --train " + dir.file("train.jsonl") + " --test " +
         dir.file("test.jsonl") + " --output-dir " + out +
         " --max-length 24 --per-device-train-batch-size 16 --save-strategy no --seed 3 " + extra;
}

TEST(TokenClassificationCli, TrainsEvaluatesAndPredictsWords) {
  testing::TempDir dir;
  tagging_cli_corpus(dir.file("train.jsonl"), 160, 1);
  tagging_cli_corpus(dir.file("test.jsonl"), 40, 2);
  const std::string model = dir.file("model");
  const auto trained = run_cli(tagging_cli_train(dir, model, "--num-train-epochs 20 --learning-rate 3e-3"));
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  expect_contains(trained.output, {"task: token-classification", "test_f1", "test_precision", "test_recall"});
  const auto untrained =
      run_cli(tagging_cli_train(dir, dir.file("untrained"), "--max-steps 1 --learning-rate 1e-9"));
  ASSERT_EQ(untrained.exit_code, 0) << untrained.output;
  const double f1 = tagging_cli_json(model + "/test_results.json").at("test_f1").get<double>();
  const double untrained_f1 =
      tagging_cli_json(dir.file("untrained") + "/test_results.json").at("test_f1").get<double>();
  EXPECT_GT(f1, 0.9);
  EXPECT_GT(f1, untrained_f1 + 0.5);

  // The label list is the training file's sorted tags, written into config.json.
  const nlohmann::json config = tagging_cli_json(model + "/config.json");
  EXPECT_EQ(config.at("id2label"),
            (nlohmann::json{{"0", "B-CAP"}, {"1", "B-NUM"}, {"2", "I-NUM"}, {"3", "O"}}));
  EXPECT_EQ(config.at("architectures"), nlohmann::json::array({"BertForTokenClassification"}));

  // Fine-tuning the tagger again keeps its labels (run_ner.py keeps a model's label2id), so tags may be ids.
  std::ofstream(dir.file("ids.jsonl"))
      << R"({"tokens": ["Bob", "paid", "7", "500"], "ner_tags": [0, 3, 1, 2]})"
      << "\n";
  const auto again = run_cli("train --model " + model + " --train " + dir.file("ids.jsonl") +
                             " --output-dir " + dir.file("again") + " --max-steps 1 --save-strategy no");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  expect_contains(again.output, {"task: token-classification"});
  EXPECT_EQ(tagging_cli_json(dir.file("again") + "/config.json").at("id2label"), config.at("id2label"));

  // berth eval: the same metrics under run_ner.py's names.
  const auto evaluated = run_cli("eval --model " + model + " --test " + dir.file("test.jsonl") +
                                 " --output " + dir.file("eval.json"));
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  const nlohmann::json metrics = tagging_cli_json(dir.file("eval.json"));
  EXPECT_NEAR(metrics.at("eval_f1").get<double>(), f1, 1e-9);
  for (const char* key : {"eval_precision", "eval_recall", "eval_accuracy", "eval_loss"})
    EXPECT_TRUE(metrics.contains(key)) << key;

  // berth predict: words with offsets into the text, and the entities they form.
  std::ofstream(dir.file("input.jsonl")) << R"({"text": "Alice paid 12  000 in Paris"})"
                                         << "\n"
                                         << R"({"tokens": ["we", "sat", "7"]})"
                                         << "\n";
  const auto predicted = run_cli("predict --model " + model + " --input " + dir.file("input.jsonl") +
                                 " --output " + dir.file("predictions.jsonl"));
  ASSERT_EQ(predicted.exit_code, 0) << predicted.output;
  std::ifstream lines(dir.file("predictions.jsonl"));
  std::string first, second;
  ASSERT_TRUE(std::getline(lines, first) && std::getline(lines, second));
  const nlohmann::json row = nlohmann::json::parse(first);
  ASSERT_EQ(row.at("words").size(), 6u);
  std::vector<std::string> labels;
  for (const auto& w : row["words"]) labels.push_back(w.at("label"));
  EXPECT_EQ(labels, (std::vector<std::string>{"B-CAP", "O", "B-NUM", "I-NUM", "O", "B-CAP"})) << first;
  EXPECT_EQ(row["words"][3].at("start"), 15);  // "000" after two spaces
  EXPECT_EQ(row["words"][3].at("end"), 18);
  ASSERT_EQ(row.at("entities").size(), 3u) << first;
  EXPECT_EQ(row["entities"][1].at("entity_group"), "NUM");
  EXPECT_EQ(row["entities"][1].at("word"), "12  000");
  EXPECT_EQ(row["entities"][1].at("start"), 11);
  const nlohmann::json tokens_row = nlohmann::json::parse(second);
  ASSERT_EQ(tokens_row.at("words").size(), 3u);
  EXPECT_EQ(tokens_row["words"][2].at("start"), 7);  // "we sat 7"
  EXPECT_EQ(tokens_row["words"][2].at("label"), "B-NUM");
}

// Two ranks, each predicting its share in batches of 3 (41 rows: the sampler repeats one), gather logits of
// different lengths padded with -100; one process in batches of 7 must report the same numbers. Three steps
// leave the model half-trained, so the scores are not trivially 0 or 1. (Suite "Ddp...": ctest reserves two
// processors for it.)
TEST(DdpTokenClassificationCli, TwoRanksReportWhatOneProcessReports) {
  testing::TempDir dir;
  tagging_cli_corpus(dir.file("train.jsonl"), 160, 1);
  tagging_cli_corpus(dir.file("test.jsonl"), 41, 2);
  const std::string model = dir.file("ddp");
  const auto trained =
      run_cli(tagging_cli_train(dir, model,
                                "--nproc-per-node 2 --device cpu --per-device-eval-batch-size 3 "
                                "--max-steps 3 --learning-rate 3e-3"));
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const auto evaluated = run_cli("eval --model " + model + " --test " + dir.file("test.jsonl") +
                                 " --batch-size 7 --output " + dir.file("eval.json"));
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  const nlohmann::json two = tagging_cli_json(model + "/test_results.json");
  const nlohmann::json one = tagging_cli_json(dir.file("eval.json"));
  EXPECT_GT(one.at("eval_f1").get<double>(), 0.05);
  EXPECT_LT(one.at("eval_f1").get<double>(), 0.95);
  EXPECT_NEAR(two.at("test_loss").get<double>(), one.at("eval_loss").get<double>(), 1e-6);
  for (const char* name : {"f1", "precision", "recall", "accuracy"})
    EXPECT_EQ(two.at(std::string("test_") + name), one.at(std::string("eval_") + name)) << name;
}

TEST(TokenClassificationCli, RefusesMismatchedTagsAndUnknownTags) {
  testing::TempDir dir;
  std::ofstream(dir.file("train.jsonl"))
      << R"({"tokens": ["a", "b"], "ner_tags": ["O", "O"]})"
      << "\n"
      << R"({"tokens": ["Alice", "paid", "7"], "ner_tags": ["B-CAP", "O"]})"
      << "\n";
  std::ofstream(dir.file("test.jsonl")) << R"({"tokens": ["a"], "ner_tags": ["B-XYZ"]})"
                                        << "\n";
  const std::string base = "train --model-preset bert-tiny --tokenizer " + testing::bert_base_uncased_dir() +
                           " --task token-classification --output-dir " + dir.file("out") + " --train ";
  auto result = run_cli(base + dir.file("train.jsonl"));
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output, {"train.jsonl:2", "2 tags (\"ner_tags\") for 3 words (\"tokens\")",
                                  "Fix: give exactly one tag per word"});
  std::ofstream(dir.file("words.jsonl")) << R"({"tokens": "Alice paid", "ner_tags": ["B-CAP", "O"]})"
                                         << "\n";
  result = run_cli(base + dir.file("words.jsonl"));
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output, {"words.jsonl:1", "\"tokens\" must be a list", "Fix: pre-split"});
  std::ofstream(dir.file("good.jsonl")) << R"({"tokens": ["a"], "ner_tags": ["O"]})"
                                        << "\n";
  result = run_cli(base + dir.file("good.jsonl") + " --test " + dir.file("test.jsonl"));
  EXPECT_EQ(result.exit_code, 2);
  expect_contains(result.output, {"test.jsonl:1", "unknown tag \"B-XYZ\"", "Fix:"});
}

}  // namespace
}  // namespace berth
