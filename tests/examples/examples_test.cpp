// The examples build and run as their comments say: the seed's plain loop, and model_init's placement.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_support.h"

namespace berth {
namespace {

using testing::contains;
using testing::expect_contains;

#ifdef BERTH_EXAMPLES_BIN_DIR

testing::CliResult run_example(const std::string& command) {
  return testing::run_program(std::string(BERTH_EXAMPLES_BIN_DIR) + "/" + command);
}

TEST(Examples, PlainLoopTrainsThreeEpochs) {
  testing::TempDir dir;
  std::ofstream out(dir.file("train.jsonl"));
  for (int i = 0; i < 20; ++i)
    out << nlohmann::json{{"text", i % 2 ? "free prize click now" : "meeting report review"},
                          {"label", i % 2 ? "spam" : "ham"}}
               .dump()
        << "\n";
  out.close();
  const auto result = run_example("plain_loop --model " + testing::tiny_bert_classifier_dir() + " --train " +
                                  dir.file("train.jsonl") + " --max-length 32");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_contains(result.output, {"epoch 1/3: mean loss", "epoch 3/3: mean loss", "over 3 batches on cpu"});
}

TEST(Examples, ModelInitIsPlacedOrReported) {
  const auto result = run_example("model_init --model " + testing::tiny_bert_classifier_dir());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // CPU-only here: the run is on meta, model_init builds on cpu.
  expect_contains(result.output,
                  {"== placement=move", "placement: moved", "the model is now on meta", "== placement=strict",
                   "PlacementError", "bert.embeddings.word_embeddings.weight"});
}
#endif

}  // namespace
}  // namespace berth
