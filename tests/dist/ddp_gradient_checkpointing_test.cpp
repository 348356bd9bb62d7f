// `berth train --gradient_checkpointing` on 2 ranks (Gloo DDP under berth launch) trains the weights of the
// same run without it: every layer recomputed in backward still hands each gradient to DDP once. An encoder
// (bert-tiny) and a decoder (llama-tiny, its lm_head tied to the embeddings).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <fstream>
#include <iterator>
#include <string>

#include "support/cli_runner.h"
#include "support/test_support.h"
#include "support/training_runs.h"

namespace berth {
namespace {

using testing::contains;
using testing::run_program;
using testing::TempDir;

const std::string kCheckpointingCli = BERTH_CLI_PATH;

class DdpGradientCheckpointing : public ::testing::TestWithParam<testing::TrainingFamily> {
 protected:
  void SetUp() override {
    testing::write_spam_ham_split(dir.file("train.jsonl"), testing::family_train_rows(GetParam()), 0);
  }
  // 2 ranks x batch 4, 3 steps of 2 accumulated micro-batches, clipped.
  std::string launch(const std::string& out, const std::string& extra) {
    const std::string train = "train " + testing::family_model_flags(GetParam(), dir.path().string()) +
                              " --train " + dir.file("train.jsonl") + " --output-dir " + out +
                              " --per-device-train-batch-size 4 --gradient-accumulation-steps 2"
                              " --max-grad-norm 0.05 --learning-rate 1e-3 --max-steps 3 --save-strategy no"
                              " --max-length 32 --seed 7 --disable-tqdm true --threads 1" +
                              extra;
    return kCheckpointingCli + " launch --nproc-per-node 2 -- " + kCheckpointingCli + " " + train;
  }
  TempDir dir;
};

TEST_P(DdpGradientCheckpointing, TwoRanksTrainTheSameWeightsWithAndWithoutIt) {
  const auto plain = run_program(launch(dir.file("plain"), ""), true, "", 120);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_FALSE(contains(plain.output, "activation checkpointing")) << plain.output;
  const auto checkpointed =
      run_program(launch(dir.file("checkpointed"), " --gradient_checkpointing"), true, "", 120);
  ASSERT_EQ(checkpointed.exit_code, 0) << checkpointed.output;
  EXPECT_TRUE(contains(checkpointed.output, "distributed: 2 ranks")) << checkpointed.output;
  EXPECT_TRUE(contains(checkpointed.output, "activation checkpointing: every layer recomputed in backward"))
      << checkpointed.output;
  const auto [worst, name] = testing::largest_weight_difference(dir.file("plain"), dir.file("checkpointed"));
  EXPECT_LE(worst, 1e-6) << "largest difference in " << name;
  // training_args.json holds the setting under both of HF's names.
  std::ifstream in(dir.file("checkpointed/training_args.json"));
  const std::string saved((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(saved, "\"activation_checkpointing\": true")) << saved;
  EXPECT_TRUE(contains(saved, "\"gradient_checkpointing\": true")) << saved;
}

INSTANTIATE_TEST_SUITE_P(Families, DdpGradientCheckpointing,
                         ::testing::Values(testing::TrainingFamily::Bert, testing::TrainingFamily::Llama),
                         [](const auto& info) { return testing::family_name(info.param); });

}  // namespace
}  // namespace berth
