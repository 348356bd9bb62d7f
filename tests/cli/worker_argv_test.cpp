// Tests for the worker's command line of `berth train --nproc-per-node N`: the flag removed in each spelling,
// argv[0] made absolute, what follows "--" kept.
#include "../../cli/worker_argv.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "support/test_support.h"

namespace berth::cli {
namespace {

using berth::testing::expect_contains;

TEST(WorkerArgv, RemovesTheNprocFlag) {
  std::string nproc;
  std::vector<std::string> cmd =
      worker_argv_without_flag({"berth", "train", "--nproc-per-node", "2", "--model", "m"}, &nproc);
  ASSERT_EQ(cmd.size(), 4u);
  EXPECT_TRUE(std::filesystem::path(cmd[0]).is_absolute()) << cmd[0];
  EXPECT_EQ(std::vector<std::string>(cmd.begin() + 1, cmd.end()),
            (std::vector<std::string>{"train", "--model", "m"}));
  EXPECT_EQ(nproc, "2");

  cmd = worker_argv_without_flag(
      {"berth", "train", "--nproc_per_node=auto", "--x", "--", "--nproc-per-node", "3"}, &nproc);
  EXPECT_EQ(std::vector<std::string>(cmd.begin() + 1, cmd.end()),
            (std::vector<std::string>{"train", "--x", "--", "--nproc-per-node", "3"}));
  EXPECT_EQ(nproc, "auto");

  cmd = worker_argv_without_flag({"berth", "train"}, &nproc);
  EXPECT_EQ(cmd.size(), 2u);
  EXPECT_EQ(nproc, "");
  expect_contains(berth::testing::error_text([] {
                    worker_argv_without_flag({"berth", "--nproc-per-node"});
                  }),
                  {"--nproc-per-node needs a value"});
}

TEST(WorkerArgv, AnEmptyArgvIsABerthBug) { EXPECT_THROW(worker_argv_without_flag({}), InternalError); }

}  // namespace
}  // namespace berth::cli
