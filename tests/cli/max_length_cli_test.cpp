// --max_length unset: berth train, eval and predict cut inputs at what the model and its tokenizer allow
// (the tiny HF classifier has 64 positions), never at a fixed 128 the model would refuse.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/tokenizer/tokenizer_files.h"
#include "support/cli_runner.h"
#include "support/test_support.h"

namespace berth {
namespace {

using testing::expect_contains;
using testing::run_cli;
using testing::TempDir;

// Spam and ham lines long enough that 64 tokens cut them.
std::string max_length_rows(const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  std::ofstream out(path);
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "free prize click here now ";
  for (int i = 0; i < 8; ++i)
    out << nlohmann::json{{"text", i % 2 ? "meeting tomorrow review report" : long_text},
                          {"label", i % 2 ? "ham" : "spam"}}
               .dump()
        << "\n";
  return path;
}

TEST(MaxLengthCli, UnsetIsWhatTheModelAndTokenizerAllow) {
  TempDir dir;
  const std::string model = testing::tiny_bert_classifier_dir();
  const auto tokenizer = tokenizer::load_tokenizer(model);
  const nlohmann::json config = nlohmann::json::parse(std::ifstream(model + "/config.json"));
  int64_t limit = config.at("max_position_embeddings").get<int64_t>();
  ASSERT_LT(limit, 128) << "the test needs a model with fewer positions than the old default";
  if (tokenizer.model_max_length)
    limit = std::min<int64_t>(limit, static_cast<int64_t>(*tokenizer.model_max_length));

  const std::string out = dir.file("run");
  const std::string data = max_length_rows(dir, "data.jsonl");
  const auto train = run_cli("train --model " + model + " --train " + data + " --output-dir " + out +
                             " --max_steps 1 --save_strategy no");
  ASSERT_EQ(train.exit_code, 0) << train.output;
  expect_contains(train.output, {"(max_length " + std::to_string(limit) + ")"});
  const nlohmann::json saved = nlohmann::json::parse(std::ifstream(out + "/training_args.json"));
  EXPECT_EQ(saved.at("max_length"), limit);

  // eval and predict of the result read its length; of the HF checkpoint, the model's limit.
  for (const std::string& dir_evaluated : {out, model}) {
    const auto eval = run_cli("eval --model " + dir_evaluated + " --test " + data);
    EXPECT_EQ(eval.exit_code, 0) << eval.output;
    const auto predict = run_cli("predict --model " + dir_evaluated + " --input " + data);
    EXPECT_EQ(predict.exit_code, 0) << predict.output;
  }
  // An explicit length beyond the positions is still refused, naming the limit.
  const auto too_long = run_cli("train --model " + model + " --train " + data + " --output-dir " +
                                dir.file("bad") + " --max_length 65");
  EXPECT_EQ(too_long.exit_code, 2);
  expect_contains(too_long.output,
                  {"--max_length 65 exceeds the model's max_position_embeddings (" +
                       std::to_string(config.at("max_position_embeddings").get<int64_t>()) + ")",
                   "leave it unset for the model's limit"});
}

}  // namespace
}  // namespace berth
