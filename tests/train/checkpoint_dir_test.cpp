// Checkpoint directories: all-or-nothing saves (a throw, a killed process, a full disk), listing, HF's
// rotation, resume paths.
#include "berth/train/checkpoint_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "berth/core/atomic_file.h"
#include "berth/train/checkpoint_manifest.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;

namespace berth::train {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A checkpoint as the trainer writes one: a couple of files, each written atomically.
std::string save(const std::string& output_dir, int64_t step, const std::string& content = "state") {
  return write_checkpoint_dir(output_dir, step, [&](const std::string& tmp) {
    write_file_atomically(tmp + "/trainer_state.json", content);
    write_file_atomically(tmp + "/model.safetensors", "weights-" + std::to_string(step));
  });
}

TEST(CheckpointDir, WritesCheckpointStepWithTheFilesAndNoTemporary) {
  TempDir dir;
  const std::string out = dir.file("run");  // created on demand
  const std::string path = save(out, 500);
  EXPECT_EQ(path, out + "/checkpoint-500");
  EXPECT_EQ(read_all(path + "/model.safetensors"), "weights-500");
  EXPECT_EQ(names_in(out), std::vector<std::string>{"checkpoint-500"});
}

TEST(CheckpointDir, AResaveAtTheSameStepReplacesTheOldOne) {
  TempDir dir;
  save(dir.path().string(), 7, "first");
  save(dir.path().string(), 7, "second");
  EXPECT_EQ(read_all(dir.file("checkpoint-7/trainer_state.json")), "second");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"checkpoint-7"});
}

TEST(CheckpointDir, AThrowingWriterLeavesNoCheckpointNoTemporaryAndThePreviousIntact) {
  TempDir dir;
  const std::string out = dir.path().string();
  save(out, 100);
  EXPECT_THROW(write_checkpoint_dir(out, 200,
                                    [](const std::string& tmp) {
                                      write_file_atomically(tmp + "/trainer_state.json", "half");
                                      throw std::runtime_error("disk on fire");
                                    }),
               std::runtime_error);
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"checkpoint-100"});
  EXPECT_EQ(read_all(out + "/checkpoint-100/model.safetensors"), "weights-100");
  EXPECT_EQ(latest_checkpoint(out), out + "/checkpoint-100");
}

TEST(CheckpointDir, AThrowingResaveKeepsTheOldSaveAtThatStep) {
  TempDir dir;
  const std::string out = dir.path().string();
  save(out, 100, "old");
  EXPECT_THROW(write_checkpoint_dir(out, 100, [](const std::string&) { throw std::runtime_error("no"); }),
               std::runtime_error);
  EXPECT_EQ(read_all(out + "/checkpoint-100/trainer_state.json"), "old");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"checkpoint-100"});
}

TEST(CheckpointDir, AProcessKilledHalfwayLeavesThePreviousCheckpointAsTheLatest) {
  TempDir dir;
  const std::string out = dir.path().string();
  save(out, 100);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child dies in the middle of the save, as a crash or a kill -9 would.
    write_checkpoint_dir(out, 200, [](const std::string& tmp) {
      write_file_atomically(tmp + "/trainer_state.json", "half");
      ::_exit(3);
    });
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 3);

  EXPECT_EQ(latest_checkpoint(out), out + "/checkpoint-100");
  ASSERT_EQ(list_checkpoints(out).size(), 1u);
  const auto removed = remove_stale_temporaries(out);
  ASSERT_EQ(removed.size(), 1u);
  expect_contains(removed[0], {out + "/.tmp-checkpoint-200-"});
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"checkpoint-100"});
  EXPECT_TRUE(remove_stale_temporaries(out).empty());
}

TEST(CheckpointDir, ListsOnlyCheckpointDigitsDirectoriesSortedByStep) {
  TempDir dir;
  const std::string out = dir.path().string();
  for (const char* name : {"checkpoint-1000", "checkpoint-20", "checkpoint-3", ".tmp-checkpoint-5-abc",
                           "checkpoint-x", "checkpoint-", "checkpoint-12b", "runs", "checkpoint-"})
    fs::create_directories(dir.path() / name);
  std::ofstream(dir.file("checkpoint-9")) << "a file, not a checkpoint";
  const auto found = list_checkpoints(out);
  std::vector<int64_t> steps;
  for (const auto& [step, path] : found) {
    steps.push_back(step);
    EXPECT_EQ(path, out + "/checkpoint-" + std::to_string(step));
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{3, 20, 1000}));
  EXPECT_EQ(latest_checkpoint(out), out + "/checkpoint-1000");
  EXPECT_TRUE(list_checkpoints(dir.file("missing")).empty());
  EXPECT_FALSE(latest_checkpoint(dir.file("missing")).has_value());
}

// Every case of tests/goldens/train_io_goldens.py: what HF's own rotate_checkpoints deletes, on directories
// with the same modification times.
TEST(CheckpointDir, RotationMatchesHfTrainer) {
  std::ifstream in(berth::testing::golden_dir() + "/train_io/rotate_checkpoints.json");
  ASSERT_TRUE(in.good()) << "missing golden; build the berth_goldens target";
  const auto cases = nlohmann::json::parse(in);
  ASSERT_GT(cases.size(), 100u);
  size_t with_deletions = 0;
  for (const auto& c : cases) {
    TempDir dir;
    const std::string out = dir.path().string();
    const auto steps = c["steps"].get<std::vector<int64_t>>();
    const auto mtimes_ns = c["mtimes_ns"].get<std::vector<int64_t>>();
    ASSERT_EQ(steps.size(), mtimes_ns.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      const fs::path path = dir.path() / ("checkpoint-" + std::to_string(steps[i]));
      fs::create_directories(path);
      timespec mtime{};
      mtime.tv_sec = static_cast<time_t>(mtimes_ns[i] / 1000000000);
      mtime.tv_nsec = mtimes_ns[i] % 1000000000;
      const timespec times[2] = {mtime, mtime};
      ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
    }
    std::optional<std::string> best;
    if (!c["best"].is_null()) best = out + "/" + c["best"].get<std::string>();
    const auto removed = rotate_checkpoints(out, c["save_total_limit"].get<int64_t>(), best);
    std::vector<std::string> expected;
    for (const auto& name : c["deleted"]) expected.push_back(out + "/" + name.get<std::string>());
    EXPECT_EQ(removed, expected) << c.dump();
    for (const auto& path : expected) EXPECT_FALSE(fs::exists(path)) << c.dump();
    EXPECT_EQ(list_checkpoints(out).size(), c["steps"].size() - expected.size()) << c.dump();
    with_deletions += !expected.empty();
  }
  EXPECT_GT(with_deletions, 20u);
}

TEST(CheckpointDir, RotationFindsTheBestCheckpointByAnotherSpellingOfItsPath) {
  TempDir dir;
  const std::string out = dir.path().string();
  for (int step : {1, 2, 3}) fs::create_directories(dir.path() / ("checkpoint-" + std::to_string(step)));
  const auto removed = rotate_checkpoints(out, 1, out + "/./checkpoint-1/");
  EXPECT_EQ(removed, std::vector<std::string>{out + "/checkpoint-2"});
}

TEST(CheckpointDir, ResumeLatestPicksTheNewestCheckpoint) {
  TempDir dir;
  const std::string out = dir.path().string();
  save(out, 10);
  save(out, 30);
  save(out, 20);
  EXPECT_EQ(resolve_resume_checkpoint(out, "latest"), out + "/checkpoint-30");
  EXPECT_EQ(resolve_resume_checkpoint(out, "true"), out + "/checkpoint-30");
  EXPECT_EQ(resolve_resume_checkpoint(out, out + "/checkpoint-10"), out + "/checkpoint-10");
}

TEST(CheckpointDir, ResumeLatestWithoutCheckpointsNamesTheDirectoryAndWhatItHolds) {
  TempDir dir;
  const std::string out = dir.path().string();
  std::ofstream(dir.file("log.jsonl")) << "{}\n";
  fs::create_directories(dir.path() / ".tmp-checkpoint-5-abcdef");
  expect_contains(error_text([&] { resolve_resume_checkpoint(out, "latest"); }),
                  {"--resume_from_checkpoint latest", out, "found none", "log.jsonl",
                   ".tmp-checkpoint-5-abcdef/", "Fix:"});
  expect_contains(error_text([&] { resolve_resume_checkpoint(dir.file("nope"), "latest"); }),
                  {"does not exist", "Fix: check --output_dir"});
}

TEST(CheckpointDir, ResumeFromAPathChecksItIsACompleteCheckpoint) {
  TempDir dir;
  expect_contains(
      error_text([&] { resolve_resume_checkpoint(dir.path().string(), dir.file("checkpoint-9")); }),
      {dir.file("checkpoint-9"), "found nothing at that path", "Fix:"});
  fs::create_directories(dir.path() / "checkpoint-9");
  std::ofstream(dir.file("checkpoint-9/model.safetensors")) << "w";
  expect_contains(
      error_text([&] { resolve_resume_checkpoint(dir.path().string(), dir.file("checkpoint-9")); }),
      {"trainer_state.json", "found none", "model.safetensors", "Fix: pass a complete checkpoint"});
  std::ofstream(dir.file("file")) << "x";
  expect_contains(error_text([&] { resolve_resume_checkpoint(dir.path().string(), dir.file("file")); }),
                  {"found a file"});
}

TEST(CheckpointDir, ANegativeStepIsRefused) {
  TempDir dir;
  expect_contains(
      error_text([&] { write_checkpoint_dir(dir.path().string(), -1, [](const std::string&) {}); }),
      {"0 or more", "-1"});
}

}  // namespace
}  // namespace berth::train

namespace berth::train {
namespace {

// A write that fills the disk (a 96 KB tmpfs, root only) fails naming the checkpoint, the space needed and
// the space free; the previous checkpoint stays, intact, and no temporary directory is left.
TEST(CheckpointDir, AFullDiskFailsNamingTheSpaceAndKeepsThePreviousCheckpoint) {
  TempDir dir;
  const std::string out = dir.file("small");
  fs::create_directories(out);
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  if (::mount("tmpfs", out.c_str(), "tmpfs", 0, "size=96k") != 0)
    GTEST_SKIP() << "mount -t tmpfs failed: " << std::strerror(errno);
  const auto write = [&](int64_t step) {
    return write_checkpoint_dir(out, step, [](const std::string& tmp) {
      write_file_atomically(tmp + "/trainer_state.json", "{}");
      write_file_atomically(tmp + "/model.safetensors", std::string(50 * 1024, 'w'));
    });
  };
  write(1);
  const std::string message = error_text([&] { write(2); });
  const std::vector<std::string> left = names_in(out);
  const CheckpointCheck first = check_checkpoint(out + "/checkpoint-1");
  ::umount2(out.c_str(), MNT_DETACH);
  expect_contains(message,
                  {out + "/checkpoint-2: the disk is full: saving checkpoint-2 needs about 50.",
                   " are free on that file system (", "No space left on device",
                   "Nothing was half-written: earlier checkpoints are intact and no temporary file is "
                   "left. Fix: free space on that disk, keep fewer checkpoints (--save_total_limit 1), "
                   "or pass an --output_dir on a disk with more room"});
  EXPECT_EQ(left, std::vector<std::string>{"checkpoint-1"});
  EXPECT_EQ(first.status, CheckpointCheck::Status::Intact);
}

}  // namespace
}  // namespace berth::train
