// Tests berth::launch with /bin/sh workers: torchrun's environment, prefixed output, failures, signals,
// restarts, validation, worker counts and signal names.
#include "berth/launch/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "berth/core/error.h"
#include "support/test_support.h"

namespace berth::launch {
namespace {

using berth::testing::contains;
using berth::testing::expect_contains;
using Clock = std::chrono::steady_clock;

struct LaunchRun {
  int code = -1;
  std::string out;
  std::string err;
  double seconds = 0;
};

// Runs `script` under /bin/sh as every worker; WORKDIR in its environment is a fresh directory.
LaunchRun run_script(LaunchOptions options, const std::string& script, const std::string& workdir = "") {
  if (!workdir.empty()) options.extra_env.emplace_back("WORKDIR", workdir);
  std::ostringstream out;
  std::ostringstream err;
  const Clock::time_point start = Clock::now();
  LaunchRun r;
  r.code = launch(options, {"/bin/sh", "-c", script}, out, err);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.out = out.str();
  r.err = err.str();
  return r;
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

pid_t read_pid(const std::filesystem::path& file) {
  std::ifstream in(file);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

// Waits (bounded) until `file` exists and is not empty.
bool wait_for_file(const std::filesystem::path& file, double seconds = 10) {
  const Clock::time_point end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end) {
    std::error_code ec;
    if (std::filesystem::file_size(file, ec) > 0 && !ec) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// A shell loop that waits at most ~5 s for a file to appear: workers coordinate without unbounded waits.
std::string wait_in_shell(const std::string& file) {
  return "i=0; while [ ! -s " + file + " ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; ";
}

TEST(Launcher, WorkersGetTorchrunsEnvironmentAndPrefixedOutput) {
  berth::testing::ScopedEnv clean({{"OMP_NUM_THREADS", nullptr}, {"OMP_WAIT_POLICY", nullptr}});
  LaunchOptions options;
  options.nproc_per_node = 2;
  options.devices = {"cuda:0", "cuda:1"};
  options.local_addr = "10.1.2.3";
  const LaunchRun r =
      run_script(options,
                 "echo \"R=$RANK L=$LOCAL_RANK W=$WORLD_SIZE LW=$LOCAL_WORLD_SIZE G=$GROUP_RANK "
                 "RR=$ROLE_RANK A=$MASTER_ADDR T=$TORCHELASTIC_RESTART_COUNT "
                 "M=$TORCHELASTIC_MAX_RESTARTS B=$BERTH_RESTART_COUNT O=$OMP_NUM_THREADS "
                 "WP=$OMP_WAIT_POLICY D=$BERTH_DEVICE LA=$BERTH_LOCAL_ADDR\"; "
                 "echo \"port $MASTER_PORT\"; echo \"to stderr $RANK\" >&2");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  expect_contains(
      r.out,
      {"[rank0]: R=0 L=0 W=2 LW=2 G=0 RR=0 A=127.0.0.1 T=0 M=0 B=0 O=1 WP=PASSIVE D=cuda:0 "
       "LA=10.1.2.3\n",
       "[rank1]: R=1 L=1 W=2 LW=2 G=0 RR=1 A=127.0.0.1 T=0 M=0 B=0 O=1 WP=PASSIVE D=cuda:1 "
       "LA=10.1.2.3\n",
       "berth launch: rank 0 (local 0) pid ", "berth launch: rank 1 (local 1) pid ", " device cuda:1\n"});
  expect_contains(r.err, {"[rank0]: to stderr 0\n", "[rank1]: to stderr 1\n", "Setting OMP_NUM_THREADS"});
  EXPECT_FALSE(contains(r.out, "[rank0]: to stderr")) << "stderr lines must go to err only";
  // Both ranks got the same free port, and it is a real one.
  const size_t at = r.out.find("[rank0]: port ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const int port = std::stoi(r.out.substr(at + 14));
  EXPECT_GT(port, 0);
  EXPECT_LE(port, 65535);
  expect_contains(r.out, {"[rank1]: port " + std::to_string(port) + "\n"});
}

TEST(Launcher, UserSettingsWinAndCpuIsShownWithoutDevices) {
  berth::testing::ScopedEnv env({{"OMP_NUM_THREADS", "3"}, {"OMP_WAIT_POLICY", "ACTIVE"}});
  LaunchOptions options;
  options.nproc_per_node = 3;
  options.nnodes = 2;
  options.node_rank = 1;
  options.master_port = 29999;
  const LaunchRun r = run_script(options,
                                 "echo \"$RANK/$WORLD_SIZE $GROUP_RANK $MASTER_PORT $OMP_NUM_THREADS "
                                 "$OMP_WAIT_POLICY\"; printf 'no newline'");
  ASSERT_EQ(r.code, 0) << r.err;
  expect_contains(r.out, {"[rank3]: 3/6 1 29999 3 ACTIVE\n", "[rank5]: 5/6 1 29999 3 ACTIVE\n",
                          "[rank4]: no newline\n", "berth launch: rank 4 (local 1) pid ", " device cpu\n"});
  EXPECT_FALSE(contains(r.err, "Setting OMP_NUM_THREADS"));
}

TEST(Launcher, FailedWorkerStopsTheGroupAndIsNamed) {
  berth::testing::TempDir dir;
  LaunchOptions options;
  options.nproc_per_node = 2;
  options.stop_grace_s = 3;
  const LaunchRun r = run_script(options,
                                 "if [ \"$RANK\" = 1 ]; then " + wait_in_shell("$WORKDIR/pid0") +
                                     "echo first words; echo last words; exit 3; fi; "
                                     "echo $$ > $WORKDIR/pid0; sleep 60",
                                 dir.path().string());
  EXPECT_EQ(r.code, 3);
  EXPECT_LT(r.seconds, 8) << "the sleeping rank must be stopped, not waited for";
  expect_contains(r.err, {"rank 1 (local 1, pid ", ") failed: exit status 3", "last 2 lines of rank 1:",
                          "  [rank1]: last words\n", "berth launch: failed: rank 1 (pid ", "exit code 3"});
  const pid_t pid0 = read_pid(dir.path() / "pid0");
  ASSERT_GT(pid0, 0);
  EXPECT_TRUE(process_gone(pid0)) << "rank 0 (pid " << pid0 << ") must have been stopped";
}

TEST(Launcher, KilledWorkerIsReportedBySignalName) {
  LaunchOptions options;
  options.nproc_per_node = 2;
  const LaunchRun r = run_script(options, "if [ \"$RANK\" = 1 ]; then echo dying; kill -9 $$; fi; sleep 60");
  EXPECT_EQ(r.code, 128 + SIGKILL);
  EXPECT_LT(r.seconds, 8);
  expect_contains(r.err,
                  {"rank 1 (local 1, pid ", "killed by signal SIGKILL", "[rank1]: dying", "exit code 137"});
}

TEST(Launcher, WorkerIgnoringSigtermGetsSigkillAfterTheGrace) {
  berth::testing::TempDir dir;
  LaunchOptions options;
  options.nproc_per_node = 2;
  options.stop_grace_s = 0.5;
  const LaunchRun r = run_script(options,
                                 "if [ \"$RANK\" = 0 ]; then " + wait_in_shell("$WORKDIR/r1") +
                                     "exit 4; fi; trap '' TERM; echo up > $WORKDIR/r1; sleep 60",
                                 dir.path().string());
  EXPECT_EQ(r.code, 4);
  EXPECT_LT(r.seconds, 6);
  expect_contains(r.err, {"rank 0 (local 0, pid ", "exit status 4", "rank 0 printed nothing", "rank 1 (pid ",
                          "still running 0.5 s after SIGTERM; sending SIGKILL"});
}

TEST(Launcher, RestartsTheGroupWithTheRestartCount) {
  const std::string script =
      "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ] && [ \"$RANK\" = 1 ]; then echo broken; exit 5; fi; "
      "echo \"ok attempt $BERTH_RESTART_COUNT of max $TORCHELASTIC_MAX_RESTARTS\"";
  LaunchOptions options;
  options.nproc_per_node = 2;
  options.max_restarts = 1;
  const LaunchRun restarted = run_script(options, script);
  EXPECT_EQ(restarted.code, 0) << restarted.err;
  expect_contains(restarted.err, {"exit status 5", "restarting the group (attempt 2 of 2)"});
  expect_contains(restarted.out, {"[rank0]: ok attempt 1 of max 1", "[rank1]: ok attempt 1 of max 1"});

  options.max_restarts = 0;
  const LaunchRun no_restart = run_script(options, script);
  EXPECT_EQ(no_restart.code, 5);
  EXPECT_FALSE(contains(no_restart.err, "restarting")) << no_restart.err;

  // Restarts are bounded: a worker that always fails ends the launch after the last one.
  options.max_restarts = 2;
  const LaunchRun always = run_script(options, "if [ \"$RANK\" = 1 ]; then exit 6; fi; sleep 60");
  EXPECT_EQ(always.code, 6);
  EXPECT_LT(always.seconds, 10);
  expect_contains(always.err,
                  {"restarting the group (attempt 2 of 3)", "restarting the group (attempt 3 of 3)",
                   "on the last of 3 attempts; exit code 6"});
}

TEST(Launcher, ForwardsSigtermToTheWorkers) {
  berth::testing::TempDir dir;
  LaunchOptions options;
  options.nproc_per_node = 2;
  options.stop_grace_s = 3;
  // Once both workers run, the launcher (this process) gets SIGTERM, as from `kill` or a job scheduler.
  std::thread sender([&] {
    if (wait_for_file(dir.path() / "ready0") && wait_for_file(dir.path() / "ready1"))
      ::kill(::getpid(), SIGTERM);
  });
  const LaunchRun r = run_script(options,
                                 "trap 'echo got TERM; exit 0' TERM; echo up > $WORKDIR/ready$RANK; "
                                 "i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; echo timed out",
                                 dir.path().string());
  sender.join();
  EXPECT_EQ(r.code, 128 + SIGTERM);
  EXPECT_LT(r.seconds, 10);
  expect_contains(r.out, {"[rank0]: got TERM", "[rank1]: got TERM"});
  EXPECT_FALSE(contains(r.out, "[rank0]: timed out"));
  expect_contains(r.err,
                  {"received SIGTERM; forwarding it to the workers", "stopped by SIGTERM; exit code 143"});
}

TEST(Launcher, KeepsTheLastLinesOfTheFailedRank) {
  LaunchOptions options;
  options.tail_lines = 20;
  const LaunchRun r =
      run_script(options, "i=0; while [ $i -lt 30 ]; do echo line $i; i=$((i+1)); done; exit 1");
  EXPECT_EQ(r.code, 1);
  expect_contains(r.err, {"last 20 lines of rank 0:", "  [rank0]: line 10\n", "  [rank0]: line 29\n"});
  EXPECT_FALSE(contains(r.err, "[rank0]: line 9\n")) << r.err;
  expect_contains(r.out, {"[rank0]: line 0\n", "[rank0]: line 29\n"});
}

TEST(Launcher, ValidationNamesFlagValueAndFix) {
  auto error = [](const LaunchOptions& o, std::vector<std::string> command = {"/bin/true"}) {
    return berth::testing::error_text([&] { validate(o, command); });
  };
  LaunchOptions o;
  o.nproc_per_node = 0;
  expect_contains(error(o), {"--nproc-per-node 0", "at least 1", "Fix:"});
  o = LaunchOptions{};
  o.nnodes = 2;
  o.node_rank = 2;
  expect_contains(error(o), {"--node-rank 2 with --nnodes 2", "0 to 1", "Fix: pass --node-rank 0..1"});
  o = LaunchOptions{};
  o.nproc_per_node = 2;
  o.devices = {"cuda:0"};
  expect_contains(error(o), {"--device lists 1 device but --nproc-per-node is 2", "Fix: list 2 devices"});
  o = LaunchOptions{};
  o.master_port = 70000;
  expect_contains(error(o), {"--master-port 70000", "1 to 65535"});
  o = LaunchOptions{};
  o.max_restarts = -1;
  expect_contains(error(o), {"--max-restarts -1", "negative"});
  expect_contains(error(LaunchOptions{}, {}), {"no command to launch", "after '--'"});

  std::ostringstream out;
  std::ostringstream err;
  const std::string missing =
      berth::testing::error_text([&] { launch(LaunchOptions{}, {"berth-no-such-program-xyz"}, out, err); });
  expect_contains(missing, {"cannot run 'berth-no-such-program-xyz'", "PATH", "Fix:"});
  EXPECT_TRUE(out.str().empty()) << "nothing starts when the command cannot run";
}

TEST(Launcher, ParseNprocAndSignalNames) {
  EXPECT_EQ(parse_nproc("4"), 4);
  EXPECT_GE(parse_nproc("auto"), 1);
  expect_contains(berth::testing::error_text([] { parse_nproc("two"); }),
                  {"--nproc-per-node 'two' is not a number of workers", "auto"});
  expect_contains(berth::testing::error_text([] { parse_nproc("0"); }),
                  {"--nproc-per-node 0 starts no worker"});
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGSTOP), "SIGSTOP");
  EXPECT_EQ(signal_name(SIGRTMIN + 1), "signal " + std::to_string(SIGRTMIN + 1));
  const int port = free_port();
  EXPECT_GT(port, 0);
  EXPECT_LE(port, 65535);
}

}  // namespace
}  // namespace berth::launch
