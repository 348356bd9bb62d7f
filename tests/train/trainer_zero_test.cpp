// ZeRO, DeepSpeed configs and mixed precision through `berth train`: the seed's DeepSpeed config refused on a
// CPU (fp16) and trained with fp16 off on 2 ranks; stages 1-3 train as DDP and as one process (BERT, RoBERTa,
// a tied Llama causal LM); checkpoints reshard to another world size and stage; `berth export`; the memory
// estimate agrees with what ranks hold; bf16 on CPU.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_support.h"
#include "support/training_runs.h"

namespace berth {
namespace {

using testing::contains;
using testing::run_program;
using testing::TempDir;

const std::string kTrainerZeroCli = BERTH_CLI_PATH;
const std::string kSeedConfig =
    std::string(BERTH_SOURCE_DIR) + "/tests/train/fixtures/seed_deepspeed_config.json";

nlohmann::json trainer_zero_read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

class ZeroTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_spam_ham_split(dir.file("train.jsonl"), 48, 0);
    testing::write_spam_ham_split(dir.file("train_lm.jsonl"),
                                  testing::family_train_rows(testing::TrainingFamily::Llama), 0);
    testing::write_spam_ham_split(dir.file("eval.jsonl"), 10, 1);
  }
  struct Run {
    int batch = 4;
    std::string max_steps = "3";
    std::string extra = "";       // more flags (--deepspeed FILE, --fsdp ..., --resume-from-checkpoint ...)
    std::string save_steps = "";  // "" = no saves
    std::string max_grad_norm = "0.05";
    testing::TrainingFamily family = testing::TrainingFamily::Bert;
  };
  // A small model without dropout (ranks and one process draw different dropout masks; bert-tiny unless
  // another family is named), accumulation 2 and clipping active, as the DDP equivalence tests.
  std::string train_args(const std::string& out, const Run& run) const {
    const bool lm = run.family == testing::TrainingFamily::Llama;
    return "train " + testing::family_model_flags(run.family, dir.path().string()) + " --train " +
           dir.file(lm ? "train_lm.jsonl" : "train.jsonl") + " --eval " + dir.file("eval.jsonl") +
           " --output-dir " + out + " --per-device-train-batch-size " + std::to_string(run.batch) +
           " --gradient-accumulation-steps 2 --max-grad-norm " + run.max_grad_norm +
           " --learning-rate 1e-3 --weight-decay 0.01 --max-steps " + run.max_steps +
           (run.save_steps.empty() ? std::string(" --save-strategy no")
                                   : " --save-strategy steps --save-steps " + run.save_steps) +
           " --max-length 32 --seed 7 --disable-tqdm true --threads 1 --overwrite-output-dir true" +
           run.extra;
  }
  testing::CliResult train(const std::string& out, const Run& run, int ranks) const {
    const std::string command = ranks == 1
                                    ? kTrainerZeroCli + " " + train_args(out, run)
                                    : kTrainerZeroCli + " launch --nproc-per-node " + std::to_string(ranks) +
                                          " -- " + kTrainerZeroCli + " " + train_args(out, run);
    return run_program(command, true, "", 180);
  }
  std::string write_config(const std::string& name, const nlohmann::json& config) const {
    const std::string path = dir.file(name);
    std::ofstream(path) << config.dump(2);
    return path;
  }
  // The seed's config as a user would adapt it for a CPU: fp16 off, the rest verbatim.
  nlohmann::json seed_without_fp16() const {
    nlohmann::json config = trainer_zero_read_json(kSeedConfig);
    config["fp16"]["enabled"] = false;
    return config;
  }
  nlohmann::json stage(int s, bool overlap) const {
    nlohmann::json config = seed_without_fp16();
    config["zero_optimization"]["stage"] = s;
    config["gradient_clipping"] = "auto";  // --max-grad-norm: clipping across shards is part of the proof
    config["zero_optimization"]["overlap_comm"] = overlap;
    config["zero_optimization"].erase("offload_optimizer");
    // Small buckets: several reduce-scatters and all-gathers per step on this tiny model.
    config["zero_optimization"]["reduce_bucket_size"] = 20000;
    config["zero_optimization"]["allgather_bucket_size"] = 20000;
    if (s == 3) config["zero_optimization"]["stage3_param_persistence_threshold"] = 1000;
    return config;
  }
  void expect_same_weights(const std::string& a, const std::string& b, double tolerance) const {
    const auto [worst, name] = testing::largest_weight_difference(a, b);
    EXPECT_LE(worst, tolerance) << "largest difference in " << name;
  }
  // One process, batch 8: what every 2-rank x 4 run must reproduce.
  std::string reference(const std::string& max_grad_norm = "0.05",
                        testing::TrainingFamily family = testing::TrainingFamily::Bert) {
    const std::string out = dir.file("reference" + max_grad_norm + testing::family_name(family));
    if (!std::ifstream(out + "/model.safetensors")) {
      Run run{8};
      run.max_grad_norm = max_grad_norm;
      run.family = family;
      const auto one = train(out, run, 1);
      EXPECT_EQ(one.exit_code, 0) << one.output;
    }
    return out;
  }
  TempDir dir;
};

TEST_F(ZeroTraining, TheSeedConfigIsRefusedOnACpuRunWithTheFp16Message) {
  const auto result = train(dir.file("seed"), {4, "3", " --deepspeed " + kSeedConfig}, 1);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "fp16")) << result.output;
  EXPECT_TRUE(contains(result.output, "bf16")) << result.output;
  EXPECT_TRUE(contains(result.output, "\"enabled\": false")) << result.output;
}

TEST_F(ZeroTraining, TheSeedConfigWithoutFp16TrainsOnTwoRanksWithZero1AndCpuOffload) {
  const std::string config = write_config("seed_cpu.json", seed_without_fp16());
  const auto two = train(dir.file("seed_cpu"), {4, "3", " --deepspeed " + config}, 2);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_TRUE(contains(two.output, "zero-1")) << two.output;
  EXPECT_TRUE(contains(two.output, "offload_optimizer cpu")) << two.output;
  // The seed's config has no gradient_clipping: DeepSpeed (and so HF with DeepSpeed) does not clip then,
  // whatever max_grad_norm says.
  expect_same_weights(reference("0"), dir.file("seed_cpu"), 1e-5);
}

// For an encoder (BERT, RoBERTa) and a decoder (Llama, whose lm_head is tied to the embeddings: ZeRO-3 uses
// that block twice per forward): 2 ranks at stages 1, 2, 3 and 3 with offload_param train as DDP and as one
// process with the combined batch.
class ZeroFamilyTraining : public ZeroTraining,
                           public ::testing::WithParamInterface<testing::TrainingFamily> {};

TEST_P(ZeroFamilyTraining, StagesOneToThreeTrainAsDdpAndAsOneProcess) {
  const testing::TrainingFamily family = GetParam();
  const std::string one = reference("0.05", family);
  Run run{4};
  run.family = family;
  const auto ddp = train(dir.file("ddp"), run, 2);
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  expect_same_weights(one, dir.file("ddp"), 1e-5);
  for (const int s : {1, 2, 3}) {
    const std::string name = "stage" + std::to_string(s);
    run.extra = " --deepspeed " + write_config(name + ".json", stage(s, true));
    const auto two = train(dir.file(name), run, 2);
    ASSERT_EQ(two.exit_code, 0) << two.output;
    EXPECT_TRUE(contains(two.output, "zero-" + std::to_string(s))) << two.output;
    expect_same_weights(dir.file("ddp"), dir.file(name), 1e-5);
    expect_same_weights(one, dir.file(name), 1e-5);
  }
  // Stage 3 with the parameter pieces and the optimizer in host memory.
  nlohmann::json offload = stage(3, true);
  offload["zero_optimization"]["offload_param"] = {{"device", "cpu"}};
  offload["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
  run.extra = " --deepspeed " + write_config("offload.json", offload);
  const auto offloaded = train(dir.file("offload"), run, 2);
  ASSERT_EQ(offloaded.exit_code, 0) << offloaded.output;
  EXPECT_TRUE(contains(offloaded.output, "offload_param cpu")) << offloaded.output;
  expect_same_weights(dir.file("ddp"), dir.file("offload"), 1e-5);
}

// Configs users copy verbatim (tests/train/fixtures/published/README.md: HF's own test configs,
// LLaMA-Factory's ZeRO-3 offload config with its comms_config and monitor_config, MedicalGPT's ZeRO-3
// WarmupDecayLR config with fp16 off), with no warmup given: HF fills "warmup_num_steps": "auto" with max(1,
// 0) = 1, so they train. Each trains on 2 ranks as on one process with the combined batch and the same
// config.
TEST_F(ZeroTraining, PublishedConfigsTrainOnTwoRanksWithoutWarmup) {
  const std::string published = std::string(BERTH_SOURCE_DIR) + "/tests/train/fixtures/published/";
  const std::vector<std::pair<std::string, int>> configs = {
      {"hf_ds_config_zero2.json", 2},
      {"hf_ds_config_zero3.json", 3},
      {"llamafactory_ds_z3_offload_config.json", 3},
      {"medicalgpt_deepspeed_zero_stage3_config.json", 3}};
  for (const auto& [name, stage] : configs) {
    SCOPED_TRACE(name);
    Run run{4};
    run.extra = " --deepspeed " + published + name;
    const auto two = train(dir.file("two-" + name), run, 2);
    ASSERT_EQ(two.exit_code, 0) << two.output;
    EXPECT_TRUE(contains(two.output, "zero-" + std::to_string(stage))) << two.output;
    EXPECT_FALSE(contains(two.output, "warmup_num_steps")) << two.output;
    run.batch = 8;
    const auto one = train(dir.file("one-" + name), run, 1);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    expect_same_weights(dir.file("one-" + name), dir.file("two-" + name), 1e-5);
    const auto [moved, where] = testing::largest_weight_difference(reference("0"), dir.file("two-" + name));
    EXPECT_GT(moved, 1e-4) << "the config's schedule and clipping differ from the plain run's: " << where;
  }
}

TEST_F(ZeroTraining, FsdpFullShardTrainsAsStage3) {
  const auto two = train(dir.file("fsdp"), {4, "3", " --fsdp full_shard"}, 2);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_TRUE(contains(two.output, "zero-3")) << two.output;
  expect_same_weights(reference(), dir.file("fsdp"), 1e-5);
}

TEST_F(ZeroTraining, ACheckpointOfTwoRanksAtStage2ResumesOnOneRankAndOnTwoRanksAtStage3) {
  const std::string stage2 = write_config("stage2.json", stage(2, false));
  const std::string stage3 = write_config("stage3.json", stage(3, false));
  // Uninterrupted: 4 steps, saving at step 2.
  const auto full = train(dir.file("full"), {4, "4", " --deepspeed " + stage2, "2"}, 2);
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const std::string checkpoint = dir.file("full/checkpoint-2");
  ASSERT_TRUE(std::ifstream(checkpoint + "/zero/layout.json")) << "no ZeRO shards in " << checkpoint;
  // The same run continued from step 2 by one process without ZeRO, and by 2 ranks at stage 3.
  const auto one = train(dir.file("one"), {8, "4", " --resume-from-checkpoint " + checkpoint}, 1);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto three = train(dir.file("three"),
                           {4, "4", " --deepspeed " + stage3 + " --resume-from-checkpoint " + checkpoint}, 2);
  ASSERT_EQ(three.exit_code, 0) << three.output;
  // Resuming moved the weights past the checkpoint's...
  const auto [moved, where] = testing::largest_weight_difference(checkpoint, dir.file("full"));
  EXPECT_GT(moved, 1e-4) << where;
  // ...exactly as far as the uninterrupted run: parameters and optimizer state were resharded.
  expect_same_weights(dir.file("full"), dir.file("one"), 1e-5);
  expect_same_weights(dir.file("full"), dir.file("three"), 1e-5);

  // berth export: the consolidated model of the stage-2 checkpoint, loadable by berth predict.
  const auto exported = run_program(kTrainerZeroCli + " export --checkpoint " + checkpoint + " --output " +
                                    dir.file("exported"));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  expect_same_weights(checkpoint, dir.file("exported"), 0);
  const auto predicted =
      run_program(kTrainerZeroCli + " predict --model " + dir.file("exported") + " --input " +
                  dir.file("eval.jsonl") + " --output " + dir.file("predicted.jsonl"));
  EXPECT_EQ(predicted.exit_code, 0) << predicted.output;
}

TEST_F(ZeroTraining, TheMemoryEstimateAgreesWithWhatEachRankHolds) {
  for (const int s : {1, 2, 3}) {
    const std::string name = "memory" + std::to_string(s);
    const std::string config = write_config(name + ".json", stage(s, false));
    const auto two = train(dir.file(name), {4, "2", " --deepspeed " + config}, 2);
    ASSERT_EQ(two.exit_code, 0) << two.output;
    bool found = false;
    std::ifstream log(dir.file(name + "/log.jsonl"));
    for (std::string line; std::getline(log, line);) {
      const auto entry = nlohmann::json::parse(line);
      if (!entry.contains("memory_estimated_bytes")) continue;
      found = true;
      for (const std::string kind : {"parameters", "gradients", "optimizer_states"}) {
        const double estimated = entry.at("memory_estimated_" + kind).get<double>();
        const double held = entry.at("memory_held_" + kind).get<double>();
        EXPECT_NEAR(held, estimated, 0.02 * estimated + 64) << "stage " << s << " " << kind << ": " << line;
      }
    }
    EXPECT_TRUE(found) << "stage " << s << ": no memory entry in log.jsonl";
  }
}

TEST_P(ZeroFamilyTraining, Bf16TrainsOnACpu) {
  Run run{8, "3", " --bf16 true"};
  run.family = GetParam();
  const auto result = train(dir.file("bf16"), run, 1);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "bf16")) << result.output;
  const auto results = trainer_zero_read_json(dir.file("bf16/all_results.json"));
  const double loss = results.at("train_loss").get<double>();
  EXPECT_TRUE(std::isfinite(loss) && loss > 0) << results.dump();
  // bf16 computes differently from fp32, but not far from it: the same run's fp32 loss is close.
  const auto fp32 = trainer_zero_read_json(reference("0.05", run.family) + "/all_results.json")
                        .at("train_loss")
                        .get<double>();
  EXPECT_NEAR(loss, fp32, 0.05 * fp32);
}

INSTANTIATE_TEST_SUITE_P(Families, ZeroFamilyTraining,
                         ::testing::Values(testing::TrainingFamily::Bert, testing::TrainingFamily::Roberta,
                                           testing::TrainingFamily::Llama, testing::TrainingFamily::Deberta),
                         [](const auto& info) { return testing::family_name(info.param); });

TEST_F(ZeroTraining, AConfigThatContradictsTheArgumentsListsEveryConflict) {
  nlohmann::json config = seed_without_fp16();
  config["train_micro_batch_size_per_gpu"] = 16;
  config["gradient_clipping"] = 2.0;
  const auto result =
      train(dir.file("conflict"), {4, "3", " --deepspeed " + write_config("c.json", config)}, 1);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "train_micro_batch_size_per_gpu")) << result.output;
  EXPECT_TRUE(contains(result.output, "gradient_clipping")) << result.output;
}

}  // namespace
}  // namespace berth
