// Several hosts for real: two "hosts" in network namespaces, `berth launch` on each, one rank each, training
// bert-tiny with a checkpoint every few steps into one shared output_dir. A host's processes killed, a host's
// worker stopped (the other host's and the store host's), the link cut: every surviving rank exits within 30
// s naming the lost rank and its address, its launcher exits non-zero, every checkpoint's manifest verifies;
// and with --max-restarts the run resumes when the host returns (with the same command, early or late) and
// finishes. Each test prints its detection
// time (fault to the survivors' exit). Skipped, saying why, without root or `ip netns`.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "berth/train/checkpoint_manifest.h"
#include "dist/network_namespaces.h"
#include "support/test_support.h"
#include "support/training_runs.h"

namespace berth {
namespace {

using testing::HostProcess;
using testing::NetworkNamespaces;
using Clock = std::chrono::steady_clock;

const std::string kNetnsCli = BERTH_CLI_PATH;
// The survivors must be gone within this many seconds of the fault (the issue's bound).
constexpr double kNetnsDetectionLimit = 30.0;

double netns_seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class NetnsHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = NetworkNamespaces::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    testing::write_spam_ham_split(dir.file("train.jsonl"), 48, 0);
    testing::write_spam_ham_split(dir.file("eval.jsonl"), 10, 1);
    net = std::make_unique<NetworkNamespaces>(2);
  }

  // `berth launch` on `host` of 2, one worker, BERTH_HEARTBEAT_TIMEOUT 8 s, training into dir/out.
  std::string launch_command(int host, const std::string& max_steps, const std::string& extra_launch = "",
                             const std::string& extra_train = "") const {
    return "BERTH_HEARTBEAT_TIMEOUT=8 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE " + kNetnsCli +
           " launch --nnodes 2 --nproc-per-node 1 --node-rank " + std::to_string(host) + " --master-addr " +
           net->address(0) + " --master-port 29500 --local-addr " + net->address(host) + " --stop-grace 2" +
           extra_launch + " -- " + kNetnsCli + " train " +
           testing::family_model_flags(testing::TrainingFamily::Bert, dir.path().string()) + " --train " +
           dir.file("train.jsonl") + " --eval " + dir.file("eval.jsonl") + " --output-dir " +
           dir.file("out") + " --per-device-train-batch-size 4 --learning-rate 1e-3 --max-steps " +
           max_steps +
           " --save-strategy steps --save-steps 10 --save-total-limit 3 --eval-strategy no --max-length 32 "
           "--seed 7 --disable-tqdm true --threads 1" +
           extra_train;
  }

  std::unique_ptr<HostProcess> start(int host, const std::string& command) {
    return std::make_unique<HostProcess>(*net, host, command,
                                         dir.file("host" + std::to_string(host) + ".log"));
  }

  // Both hosts training, until checkpoint-10 is on disk (or 90 s went by: a failure).
  void start_both(const std::string& max_steps = "100000", const std::string& extra_launch = "") {
    hosts[0] = start(0, launch_command(0, max_steps, extra_launch));
    hosts[1] = start(1, launch_command(1, max_steps));
    const auto start_time = Clock::now();
    while (!std::filesystem::exists(dir.file("out/checkpoint-10")) && netns_seconds_since(start_time) < 90 &&
           !hosts[0]->wait(0.1) && !hosts[1]->wait(0.1)) {
    }
    ASSERT_TRUE(std::filesystem::exists(dir.file("out/checkpoint-10"))) << "host 0:\n"
                                                                        << hosts[0]->output() << "\nhost 1:\n"
                                                                        << hosts[1]->output();
  }

  // The workers of `host`: every process in its namespace but its launcher.
  std::vector<pid_t> workers(int host) const {
    std::vector<pid_t> pids = net->pids(host);
    pids.erase(std::remove(pids.begin(), pids.end(), hosts[host]->pid()), pids.end());
    return pids;
  }
  void signal_all(const std::vector<pid_t>& pids, int sig) const {
    for (pid_t pid : pids) ::kill(pid, sig);
  }

  // Waits for `host`'s launcher to exit after the fault at `fault`, expecting it within the limit and
  // non-zero; returns the seconds it took.
  double expect_exits_in_time(int host, Clock::time_point fault) {
    hosts[host]->wait(kNetnsDetectionLimit + 15);
    const double seconds = netns_seconds_since(fault);
    EXPECT_TRUE(hosts[host]->exited()) << "host " << host << " still running:\n" << hosts[host]->output();
    EXPECT_NE(hosts[host]->exit_code(), 0) << hosts[host]->output();
    EXPECT_LT(seconds, kNetnsDetectionLimit) << hosts[host]->output();
    std::cout << "[netns] host " << host << " exited " << seconds << " s after the fault\n";
    return seconds;
  }

  // Every checkpoint left in the shared output_dir verifies against its manifest.
  void expect_checkpoints_intact() const {
    int checked = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.file("out"))) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("checkpoint-", 0) != 0) continue;
      const train::CheckpointCheck check = train::check_checkpoint(entry.path().string());
      EXPECT_EQ(check.status, train::CheckpointCheck::Status::Intact) << name << ": " << check.problem;
      ++checked;
    }
    EXPECT_GT(checked, 0);
  }

  // Both launchers exit 0 after host 0 restarted its group and every rank resumed from a checkpoint; the run
  // reached step 300 and every checkpoint verifies.
  void expect_resumed_to_the_end() {
    ASSERT_TRUE(hosts[0]->wait(150)) << hosts[0]->output();
    ASSERT_TRUE(hosts[1]->wait(30)) << hosts[1]->output();
    EXPECT_EQ(hosts[0]->exit_code(), 0) << hosts[0]->output();
    EXPECT_EQ(hosts[1]->exit_code(), 0) << hosts[1]->output();
    testing::expect_contains(
        hosts[0]->output(), {"restarting the group (attempt 2 of 2)", "resuming from the latest checkpoint"});
    std::ifstream state(dir.file("out/checkpoint-300/trainer_state.json"));
    ASSERT_TRUE(state.good());
    EXPECT_EQ(nlohmann::json::parse(state).at("global_step").get<int>(), 300);
    expect_checkpoints_intact();
  }

  // The same two hosts without the fault end with the same weights, bit for bit.
  void expect_weights_of_an_uninterrupted_run() {
    std::filesystem::rename(dir.file("out"), dir.file("resumed"));
    hosts[0] = start(0, launch_command(0, "300"));
    hosts[1] = start(1, launch_command(1, "300"));
    ASSERT_TRUE(hosts[0]->wait(120) && hosts[1]->wait(30)) << hosts[0]->output();
    ASSERT_EQ(hosts[0]->exit_code(), 0) << hosts[0]->output();
    const auto [worst, name] = testing::largest_weight_difference(dir.file("out"), dir.file("resumed"));
    EXPECT_EQ(worst, 0.0) << "largest difference in " << name;
  }

  std::string rank_on(int rank, int host) const {
    return "rank " + std::to_string(rank) + " (host " + testing_hostname() + " at " + net->address(host) +
           " pid ";
  }
  static std::string testing_hostname() {
    char name[256] = {0};
    gethostname(name, sizeof(name) - 1);
    return name;
  }

  testing::TempDir dir;
  std::unique_ptr<NetworkNamespaces> net;
  std::unique_ptr<HostProcess> hosts[2];
};

TEST_F(NetnsHosts, AHostKilledIsNamedByTheSurvivorWithinSeconds) {
  ASSERT_NO_FATAL_FAILURE(start_both());
  signal_all(net->pids(1), SIGKILL);
  const auto fault = Clock::now();
  expect_exits_in_time(0, fault);
  testing::expect_contains(hosts[0]->output(), {"R" + rank_on(1, 1).substr(1), "has stopped its heartbeat",
                                                "a peer was lost", "berth launch: rank 0 (local 0, pid"});
  expect_checkpoints_intact();
}

TEST_F(NetnsHosts, AStoppedWorkerIsNamedAsUnresponsiveWithItsHost) {
  ASSERT_NO_FATAL_FAILURE(start_both());
  const std::vector<pid_t> stopped = workers(1);
  ASSERT_FALSE(stopped.empty());
  signal_all(stopped, SIGSTOP);
  const auto fault = Clock::now();
  expect_exits_in_time(0, fault);
  testing::expect_contains(hosts[0]->output(),
                           {rank_on(1, 1), "is unresponsive: its heartbeat has not moved"});
  testing::expect_contains(hosts[1]->output(), {"was stopped by SIGSTOP"});
  // Continued, the stopped rank finds its peer gone and its launcher fails too.
  signal_all(stopped, SIGCONT);
  expect_exits_in_time(1, Clock::now());
  expect_checkpoints_intact();
}

TEST_F(NetnsHosts, AStoppedStoreHostIsNamedByTheOtherHost) {
  ASSERT_NO_FATAL_FAILURE(start_both());
  const std::vector<pid_t> stopped = workers(0);  // rank 0: the TCPStore every rank meets in
  ASSERT_FALSE(stopped.empty());
  signal_all(stopped, SIGSTOP);
  const auto fault = Clock::now();
  expect_exits_in_time(1, fault);
  testing::expect_contains(hosts[1]->output(),
                           {"the rendezvous store, hosted by " + rank_on(0, 0), "has not answered for 8 s"});
  signal_all(stopped, SIGCONT);
  expect_exits_in_time(0, Clock::now());
  expect_checkpoints_intact();
}

TEST_F(NetnsHosts, ACutLinkStopsBothSidesNamingTheOther) {
  ASSERT_NO_FATAL_FAILURE(start_both());
  ASSERT_EQ(net->exec(1, "ip link set " + net->interface() + " down"), 0);
  const auto fault = Clock::now();
  expect_exits_in_time(0, fault);
  expect_exits_in_time(1, fault);
  testing::expect_contains(hosts[0]->output(), {rank_on(1, 1), "is unresponsive"});
  testing::expect_contains(hosts[1]->output(), {"the rendezvous store, hosted by " + rank_on(0, 0)});
  expect_checkpoints_intact();
}

TEST_F(NetnsHosts, PacketLossStopsBothSides) {
  if (net->exec(1, "tc qdisc add dev " + net->interface() + " root netem loss 100%") != 0)
    GTEST_SKIP() << "tc netem is not available (kernel module sch_netem)";
  ASSERT_EQ(net->exec(1, "tc qdisc del dev " + net->interface() + " root"), 0);
  ASSERT_NO_FATAL_FAILURE(start_both());
  ASSERT_EQ(net->exec(1, "tc qdisc add dev " + net->interface() + " root netem loss 100%"), 0);
  const auto fault = Clock::now();
  expect_exits_in_time(0, fault);
  expect_exits_in_time(1, fault);
  testing::expect_contains(hosts[0]->output(), {rank_on(1, 1)});
  testing::expect_contains(hosts[1]->output(), {rank_on(0, 0)});
  expect_checkpoints_intact();
}

// --max-restarts 1 on host 0; host 1's processes are killed and it comes back at once with the same command:
// the ranks agree to resume (host 0's launcher restarted, host 1's is new), and the run finishes all its
// steps from the checkpoint with the weights of an uninterrupted two-host run, bit for bit.
TEST_F(NetnsHosts, ARestartResumesWhenTheHostReturns) {
  ASSERT_NO_FATAL_FAILURE(start_both("300", " --max-restarts 1"));
  signal_all(net->pids(1), SIGKILL);
  hosts[1]->wait(5);
  hosts[1] = start(1, launch_command(1, "300"));
  ASSERT_NO_FATAL_FAILURE(expect_resumed_to_the_end());
  ASSERT_NO_FATAL_FAILURE(expect_weights_of_an_uninterrupted_run());
}

// Host 1 hangs (its worker stopped) and is restarted before host 0 notices: the new rank 1 finds the old
// group's store still serving, says so, waits for that group to end, joins the restarted one and resumes.
TEST_F(NetnsHosts, AHostRestartedBeforeTheOthersNoticeWaitsForTheNextGroup) {
  ASSERT_NO_FATAL_FAILURE(start_both("300", " --max-restarts 1"));
  const std::vector<pid_t> hung = workers(1);
  ASSERT_FALSE(hung.empty());
  signal_all(hung, SIGSTOP);
  ::kill(hosts[1]->pid(), SIGKILL);  // its launcher; the stopped worker stays behind
  hosts[1]->wait(5);
  hosts[1] = start(1, launch_command(1, "300"));
  const auto returned = Clock::now();
  while (hosts[0]->output().find("restarting the group") == std::string::npos &&
         netns_seconds_since(returned) < kNetnsDetectionLimit && !hosts[0]->wait(0.2)) {
  }
  signal_all(hung, SIGKILL);
  ASSERT_NO_FATAL_FAILURE(expect_resumed_to_the_end());
  testing::expect_contains(hosts[1]->output(), {"rank 1 of 2: the store at " + net->address(0) +
                                                    ":29500 serves a group that is "
                                                    "still running, where rank 1 is " +
                                                    rank_on(1, 1).substr(8),
                                                "waiting for that group to end", "joining the new group at"});
}

}  // namespace
}  // namespace berth
