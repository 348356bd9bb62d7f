// `berth launch` as users run it: flags, validation messages, exit codes, two nodes on one machine, Ctrl-C.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "berth/launch/launcher.h"
#include "support/cli_runner.h"
#include "support/test_support.h"

namespace {

using berth::testing::CliResult;
using berth::testing::contains;
using berth::testing::expect_contains;
using berth::testing::run_cli;

TEST(LaunchCli, StartsWorkersAndPrefixesTheirOutput) {
  const CliResult r = run_cli("launch --nproc-per-node 2 -- /bin/sh -c 'echo \"R=$RANK of $WORLD_SIZE\"'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, {"[rank0]: R=0 of 2\n", "[rank1]: R=1 of 2\n",
                             "berth launch: rank 1 (local 1) pid ", " device cpu\n"});
  // Without '--' a command whose own arguments are not dashed works too.
  const CliResult plain = run_cli("launch /bin/echo hello");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  expect_contains(plain.output, {"[rank0]: hello\n"});
}

TEST(LaunchCli, DevicesSetTheWorkerCountAndEnvVarsGiveDefaults) {
  const CliResult r =
      run_cli("launch --device cpu,cpu -- /bin/sh -c 'echo \"$RANK $BERTH_DEVICE $LOCAL_WORLD_SIZE\"'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, {"[rank0]: 0 cpu 2\n", "[rank1]: 1 cpu 2\n"});

  const CliResult env = run_cli("launch -- /bin/sh -c 'echo \"$WORLD_SIZE $MASTER_PORT\"'", true,
                                "BERTH_NPROC_PER_NODE=3 MASTER_PORT=29123");
  ASSERT_EQ(env.exit_code, 0) << env.output;
  expect_contains(env.output, {"[rank2]: 3 29123\n"});
}

TEST(LaunchCli, WorkerExitCodeIsTheLaunchersAndTheFailureIsExplained) {
  const CliResult r = run_cli(
      "launch --nproc-per-node 2 -- /bin/sh -c 'if [ $RANK = 1 ]; then echo bye; exit 7; fi; "
      "sleep 30'");
  EXPECT_EQ(r.exit_code, 7) << r.output;
  expect_contains(r.output,
                  {"rank 1 (local 1, pid ", "failed: exit status 7", "[rank1]: bye", "exit code 7"});
}

TEST(LaunchCli, ValidationNamesFlagValueAndFix) {
  struct Case {
    std::string args;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"launch --nproc-per-node two -- true", {"--nproc-per-node 'two' is not a number of workers"}},
      {"launch --nnodes 2 --node-rank 2 --master-port 29555 -- true",
       {"--node-rank 2 with --nnodes 2", "Fix: pass --node-rank 0..1"}},
      {"launch --nnodes 2 --node-rank 1 -- true",
       {"--nnodes 2 needs --master-port", "Fix: pass --master-port"}},
      {"launch --nproc-per-node 2", {"no command to launch", "after '--'"}},
      {"launch --device gpu0 -- true", {"gpu0", "cuda:N"}},
      {"launch --device cpu,,cpu -- true", {"--device 'cpu,,cpu' has an empty entry"}},
  };
  for (const Case& c : cases) {
    const CliResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    expect_contains(r.output, c.parts);
    EXPECT_FALSE(contains(r.output, "berth launch: rank")) << "nothing may start: " << c.args;
  }
}

TEST(LaunchCli, TwoNodesOnOneMachineMakeOneWorld) {
  const int port = berth::launch::free_port();
  std::vector<CliResult> results(2);
  std::vector<std::thread> nodes;
  for (int node = 0; node < 2; ++node) {
    nodes.emplace_back([&, node] {
      results[static_cast<size_t>(node)] = run_cli(
          "launch --nnodes 2 --node-rank " + std::to_string(node) + " --nproc-per-node 2 --master-port " +
          std::to_string(port) + " -- /bin/sh -c 'echo \"rank=$RANK world=$WORLD_SIZE group=$GROUP_RANK " +
          "port=$MASTER_PORT\"'");
    });
  }
  for (std::thread& t : nodes) t.join();
  for (int node = 0; node < 2; ++node) {
    const CliResult& r = results[static_cast<size_t>(node)];
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_contains(r.output,
                    {"node " + std::to_string(node) + " of 2", "works only when every node is this machine"});
    for (int local = 0; local < 2; ++local) {
      const int rank = node * 2 + local;
      expect_contains(r.output,
                      {"[rank" + std::to_string(rank) + "]: rank=" + std::to_string(rank) +
                       " world=4 group=" + std::to_string(node) + " port=" + std::to_string(port) + "\n"});
    }
  }
}

// Ctrl-C (SIGINT) to the berth launch process reaches the workers; the launcher ends with 128+2, bounded.
TEST(LaunchCli, InterruptIsForwardedToTheWorkers) {
  berth::testing::TempDir dir;
  const std::string log = dir.file("launch.log");
  const std::string script = "trap 'echo got INT; exit 0' INT; echo $$ > " + dir.file("pid") +
                             "$RANK; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(BERTH_CLI_PATH, BERTH_CLI_PATH, "launch", "--nproc-per-node", "2", "--", "/bin/sh", "-c",
            script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto exists = [&](const std::string& f) {
    std::error_code ec;
    return std::filesystem::file_size(f, ec) > 0 && !ec;
  };
  while (!(exists(dir.file("pid0")) && exists(dir.file("pid1"))) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(pid, SIGINT);
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "berth launch did not end after SIGINT";
  }
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_TRUE(WIFEXITED(status)) << text.str();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << text.str();
  expect_contains(text.str(), {"[rank0]: got INT", "[rank1]: got INT", "received SIGINT; forwarding it",
                               "stopped by SIGINT; exit code 130"});
}

}  // namespace
