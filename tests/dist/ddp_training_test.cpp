// `berth train` on several processes: 2 ranks x batch B train exactly as 1 rank x batch 2B (BERT, RoBERTa and
// a tied Llama causal LM); a rank that dies, stops (SIGSTOP), never arrives or builds another model stops the
// run quickly with an error naming it; two "hosts" on 127.0.0.1 / 127.0.0.2 train together.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>

#include "berth/io/safetensors.h"
#include "berth/launch/launcher.h"
#include "support/cli_runner.h"
#include "support/test_support.h"
#include "support/training_runs.h"

namespace berth {
namespace {

using testing::contains;
using testing::run_program;
using testing::TempDir;

const std::string kCli = BERTH_CLI_PATH;

class DdpTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_spam_ham_split(dir.file("train.jsonl"), 48, 0);
    testing::write_spam_ham_split(dir.file("train_lm.jsonl"),
                                  testing::family_train_rows(testing::TrainingFamily::Llama), 0);
    testing::write_spam_ham_split(dir.file("eval.jsonl"), 10, 1);
  }
  // A small model without dropout (so that a rank's randomness cannot differ from one process's), trained
  // with clipping and accumulation: bert-tiny unless another family is named.
  struct Run {
    int batch = 4;
    std::string max_steps = "3";
    std::string learning_rate = "1e-3";
    std::string config = "";  // more --config-overrides items (bert-tiny's)
    std::string extra = "";   // more flags
    std::string save_strategy = "no";
    testing::TrainingFamily family = testing::TrainingFamily::Bert;
  };
  std::string train_args(const std::string& out, const Run& run) const {
    const bool lm = run.family == testing::TrainingFamily::Llama;
    return "train " + testing::family_model_flags(run.family, dir.path().string()) + run.config +
           " --train " + dir.file(lm ? "train_lm.jsonl" : "train.jsonl") + " --eval " +
           dir.file("eval.jsonl") + " --output-dir " + out + " --per-device-train-batch-size " +
           std::to_string(run.batch) +
           " --gradient-accumulation-steps 2 --max-grad-norm 0.05 --learning-rate " + run.learning_rate +
           " --max-steps " + run.max_steps + " --save-strategy " + run.save_strategy +
           " --max-length 32 --seed 7 --disable-tqdm true" + " --threads 1" + run.extra;
  }
  static std::map<std::string, at::Tensor> weights(const std::string& dir) {
    return testing::saved_weights(dir);
  }
  static void expect_same_weights(const std::string& a, const std::string& b, double tolerance) {
    const auto [worst, name] = testing::largest_weight_difference(a, b);
    EXPECT_LE(worst, tolerance) << "largest difference in " << name;
  }
  TempDir dir;
};

// For an encoder (BERT, RoBERTa) and a decoder (Llama, its lm_head tied to the embeddings).
class DdpFamilyTraining : public DdpTraining,
                          public ::testing::WithParamInterface<testing::TrainingFamily> {};

TEST_P(DdpFamilyTraining, TwoRanksTrainAsOneRankWithTwiceTheBatch) {
  const testing::TrainingFamily family = GetParam();
  Run one_rank{8};
  one_rank.family = family;
  const auto one = run_program(kCli + " " + train_args(dir.file("one"), one_rank), true, "", 120);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  Run two_ranks{4};
  two_ranks.family = family;
  const auto two = run_program(
      kCli + " launch --nproc-per-node 2 -- " + kCli + " " + train_args(dir.file("two"), two_ranks), true, "",
      120);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_TRUE(contains(two.output, "distributed: 2 ranks")) << two.output;
  // The step moved the weights (so equality below is not trivial)...
  Run still{8, "3", "1e-12"};
  still.family = family;
  const auto initial = run_program(kCli + " " + train_args(dir.file("zero"), still));
  ASSERT_EQ(initial.exit_code, 0) << initial.output;
  const std::string moved_tensor = testing::family_moved_tensor(family);
  const auto moved =
      (weights(dir.file("one")).at(moved_tensor) - weights(dir.file("zero")).at(moved_tensor)).abs().max();
  EXPECT_GT(moved.item<double>(), 1e-4) << moved_tensor;
  // ...and 2 ranks x 4 match 1 rank x 8, accumulation and clipping included.
  expect_same_weights(dir.file("one"), dir.file("two"), 1e-5);
  // Metrics are computed over the whole eval set on every rank: the same as one process's.
  std::ifstream one_results(dir.file("one/all_results.json"));
  std::ifstream two_results(dir.file("two/all_results.json"));
  const auto a = nlohmann::json::parse(one_results);
  const auto b = nlohmann::json::parse(two_results);
  EXPECT_NEAR(a.at("train_loss").get<double>(), b.at("train_loss").get<double>(), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Families, DdpFamilyTraining,
                         ::testing::Values(testing::TrainingFamily::Bert, testing::TrainingFamily::Roberta,
                                           testing::TrainingFamily::Llama, testing::TrainingFamily::Deberta),
                         [](const auto& info) { return testing::family_name(info.param); });

TEST_F(DdpTraining, RanksWithDifferentModelsStopNamingTheDifference) {
  // Rank 1 builds a narrower feed-forward layer than rank 0.
  const std::string script = "if [ \"$RANK\" = 1 ]; then size=256; else size=512; fi; exec " + kCli + " " +
                             train_args(dir.file("mismatch"), {4, "3", "1e-3", ",intermediate_size=$size"});
  const auto result =
      run_program(kCli + " launch --nproc-per-node 2 -- /bin/sh -c '" + script + "'", true, "", 120);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_TRUE(contains(result.output, "disagree")) << result.output;
  EXPECT_TRUE(contains(result.output, "intermediate")) << result.output;
}

TEST_F(DdpTraining, ARankThatDiesStopsTheOthersWithinSeconds) {
  // Rank 1 is killed a few seconds into a long run. Without a launcher: rank 0 must notice by itself.
  const int port = launch::free_port();
  const std::string env = " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
                          " WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 BERTH_DIST_TIMEOUT=600";
  const std::string long_run = train_args(dir.file("dies"), {4, "100000"});
  auto rank0 = std::async(std::launch::async, [&] {
    const auto start = std::chrono::steady_clock::now();
    auto result = run_program(kCli + " " + long_run, true, "RANK=0 LOCAL_RANK=0" + env, 120);
    return std::make_pair(result, std::chrono::steady_clock::now() - start);
  });
  const auto rank1 = run_program("/bin/sh -c '(sleep 6; kill -9 $$) & exec " + kCli + " " + long_run + "'",
                                 true, "RANK=1 LOCAL_RANK=1" + env, 120);
  EXPECT_EQ(rank1.exit_code, 137) << rank1.output;
  const auto killed_at = std::chrono::steady_clock::now();
  const auto [result, elapsed] = rank0.get();
  (void)elapsed;
  const double after_kill =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_LT(after_kill, 30.0) << result.output;
  EXPECT_TRUE(contains(result.output, "a peer was lost")) << result.output;
  EXPECT_TRUE(contains(result.output, "on rank 0 of 2")) << result.output;
}

TEST_F(DdpTraining, TheLauncherNamesTheRankThatDied) {
  const std::string script = "if [ \"$RANK\" = 1 ]; then (sleep 6; kill -9 $$) & fi; exec " + kCli + " " +
                             train_args(dir.file("dies"), {4, "100000"});
  const auto start = std::chrono::steady_clock::now();
  const auto result =
      run_program(kCli + " launch --nproc-per-node 2 -- /bin/sh -c '" + script + "'", true, "", 120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(result.exit_code, 0);
  EXPECT_LT(seconds, 60.0);
  EXPECT_TRUE(contains(result.output, "rank 1 (pid")) << result.output;
  EXPECT_TRUE(contains(result.output, "failed with killed by signal SIGKILL")) << result.output;
}

// kill -STOP on rank 1 mid-training: it neither dies nor answers. Rank 0 names it as unresponsive once its
// heartbeat has stood still for BERTH_HEARTBEAT_TIMEOUT (8 s here, 20 s by default), the launcher names it
// too, and nothing is left behind: the stopped process is continued and ended.
TEST_F(DdpTraining, ARankThatStopsIsNamedAsUnresponsive) {
  const std::string out = dir.file("stops");
  const std::string pid_file = dir.file("rank1.pid");
  // Rank 1 stops itself once training is under way (rank 0 has saved checkpoint-2), waiting at most 60 s.
  const std::string script =
      "if [ \"$RANK\" = 1 ]; then echo $$ > " + pid_file + "; (i=0; while [ ! -d " + out +
      "/checkpoint-2 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; kill -STOP $$) & "
      "fi; exec " +
      kCli + " " + train_args(out, {4, "100000", "1e-3", "", " --save-steps 2", "steps"});
  const auto start = std::chrono::steady_clock::now();
  const auto result = run_program(kCli + " launch --nproc-per-node 2 -- /bin/sh -c '" + script + "'", true,
                                  "BERTH_HEARTBEAT_TIMEOUT=8", 120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_LT(seconds, 60.0) << result.output;
  std::ifstream in(pid_file);
  pid_t pid = 0;
  in >> pid;
  ASSERT_GT(pid, 0) << result.output;
  const std::string rank1 = "rank 1 (pid " + std::to_string(pid) + ")";
  berth::testing::expect_contains(
      result.output,
      {"on rank 0 of 2 (gloo): rank 1 (host ",
       " at 127.0.0.1 pid " + std::to_string(pid) + ") is unresponsive: its heartbeat has not moved for 8 s",
       "Fix: resume it (kill -CONT PID on its host) or end it",
       rank1 + " was stopped by SIGSTOP: it is unresponsive", rank1 + " was stopped: unresponsive"});
  EXPECT_NE(::kill(pid, 0), 0) << "rank 1 was left behind";
}

TEST_F(DdpTraining, ARankThatNeverArrivesIsNamed) {
  const int port = launch::free_port();
  const auto result = run_program(kCli + " " + train_args(dir.file("alone"), {4}), true,
                                  "RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 "
                                  "MASTER_PORT=" +
                                      std::to_string(port) + " BERTH_RENDEZVOUS_TIMEOUT=3",
                                  60);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_TRUE(contains(result.output, "rank 1")) << result.output;
  EXPECT_TRUE(contains(result.output, "never arrived")) << result.output;
}

TEST_F(DdpTraining, TwoNodesOnTwoLoopbackAddressesTrainAsOne) {
  const int port = launch::free_port();
  const std::string node = kCli +
                           " launch --nnodes 2 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port " +
                           std::to_string(port);
  const std::string command = " -- " + kCli + " " + train_args(dir.file("nodes"), {4});
  auto second = std::async(std::launch::async, [&] {
    return run_program(node + " --node-rank 1 --local-addr 127.0.0.2" + command, true, "", 120);
  });
  const auto first = run_program(node + " --node-rank 0 --local-addr 127.0.0.1" + command, true, "", 120);
  const auto other = second.get();
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(other.exit_code, 0) << other.output;
  const auto one = run_program(kCli + " " + train_args(dir.file("one"), {8}), true, "", 120);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  expect_same_weights(dir.file("one"), dir.file("nodes"), 1e-5);
}

TEST_F(DdpTraining, MpirunStartsRanksThatTrainAsOne) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "mpirun is not installed (OpenMPI: apt-get install openmpi-bin, as scripts/setup does)";
  const int port = launch::free_port();
  // OpenMPI's variables (OMPI_COMM_WORLD_RANK, ...) are all berth needs; on one node MASTER_ADDR defaults to
  // 127.0.0.1, and the port is given so that parallel tests do not meet on 29500.
  const auto result =
      run_program("mpirun --allow-run-as-root --oversubscribe -np 2 -x MASTER_PORT=" + std::to_string(port) +
                      " " + kCli + " " + train_args(dir.file("mpi"), {4}),
                  true, "", 120);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "distributed: 2 ranks (openmpi, gloo)")) << result.output;
  const auto one = run_program(kCli + " " + train_args(dir.file("one"), {8}), true, "", 120);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  expect_same_weights(dir.file("one"), dir.file("mpi"), 1e-5);
}

TEST_F(DdpTraining, TrainWithNprocPerNodeRunsTheLauncherItself) {
  const auto result =
      run_program(kCli + " " + train_args(dir.file("shortcut"), {4}) + " --nproc-per-node 2", true, "", 120);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "berth launch: rank 1 (local 1)")) << result.output;
  EXPECT_TRUE(contains(result.output, "[rank0]: distributed: 2 ranks")) << result.output;
  const auto one = run_program(kCli + " " + train_args(dir.file("one"), {8}), true, "", 120);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  expect_same_weights(dir.file("one"), dir.file("shortcut"), 1e-5);
  // Several devices in one process are never used together: the list starts one worker per device.
  const auto listed =
      run_program(kCli + " " + train_args(dir.file("listed"), {4}) + " --device cpu,cpu", true, "", 120);
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_TRUE(contains(listed.output, "berth launch: rank 1 (local 1) pid")) << listed.output;
  expect_same_weights(dir.file("one"), dir.file("listed"), 1e-5);
}

TEST_F(DdpTraining, ARestartedGroupResumesFromTheLatestCheckpoint) {
  // On the first attempt rank 1 is killed once a checkpoint exists; the launcher restarts the group and both
  // ranks continue from the newest checkpoint instead of starting over.
  const std::string out = dir.file("restart");
  const std::string script =
      "if [ \"$RANK\" = 1 ] && [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then (until ls -d " + out +
      "/checkpoint-* >/dev/null 2>&1; do sleep 0.05; done; kill -9 $$) & fi; exec " + kCli + " " +
      train_args(out,
                 {4, "100", "1e-3", "", " --save-steps 2 --save-total-limit 2 --eval-strategy no", "steps"});
  const auto result = run_program(
      kCli + " launch --nproc-per-node 2 --max-restarts 1 -- /bin/sh -c '" + script + "'", true, "", 120);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "killed by signal SIGKILL")) << result.output;
  EXPECT_TRUE(contains(result.output, "restart 1: resuming from the latest checkpoint")) << result.output;
  EXPECT_TRUE(contains(result.output, "Resumed at step")) << result.output;
  std::ifstream state(out + "/trainer_state.json");
  EXPECT_EQ(nlohmann::json::parse(state).at("global_step"), 100);
}

TEST_F(DdpTraining, HyperparameterSearchRunsTheSameTrialsOnEveryRank) {
  std::ofstream(dir.file("space.json"))
      << R"({"learning_rate": {"type": "choice", "values": [0.001, 0.0001]}})";
  const auto result =
      run_program(kCli + " " + train_args(dir.file("search"), {4}) + " --eval-strategy epoch --hp-search " +
                      dir.file("space.json") + " --hp-method grid --n-trials 0 --nproc-per-node 2",
                  true, "", 120);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "[rank0]: best trial: run-")) << result.output;
  std::ifstream lines(dir.file("search/hp_search.jsonl"));
  std::string line;
  int trials = 0;
  while (std::getline(lines, line)) ++trials;
  EXPECT_EQ(trials, 2);
}

TEST_F(DdpTraining, BadLauncherSettingsNameTheVariableAndTheFix) {
  const auto timeout =
      run_program(kCli + " " + train_args(dir.file("bad"), {4}), true,
                  "RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 "
                  "MASTER_PORT=29999 BERTH_RENDEZVOUS_TIMEOUT=soon",
                  60);
  EXPECT_EQ(timeout.exit_code, 2) << timeout.output;
  EXPECT_TRUE(
      contains(timeout.output, "BERTH_RENDEZVOUS_TIMEOUT='soon' is not a positive number of seconds. Fix:"))
      << timeout.output;
  const auto device = run_program(kCli + " " + train_args(dir.file("bad"), {4}) + " --device meta", true,
                                  "BERTH_DEVICE=cpu", 60);
  EXPECT_EQ(device.exit_code, 2) << device.output;
  EXPECT_TRUE(contains(device.output,
                       "this rank's device is cpu (BERTH_DEVICE, set by `berth launch --device`) but "
                       "the training arguments ask for meta. Fix:"))
      << device.output;
  const auto nested = run_program(kCli + " " + train_args(dir.file("bad"), {4}) + " --nproc-per-node 2", true,
                                  "RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2", 60);
  EXPECT_EQ(nested.exit_code, 2) << nested.output;
  EXPECT_TRUE(contains(nested.output,
                       "but this process already is one (RANK/WORLD_SIZE are set by a launcher). Fix:"))
      << nested.output;
}

}  // namespace
}  // namespace berth
