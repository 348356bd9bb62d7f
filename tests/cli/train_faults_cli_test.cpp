// `berth train` when things break, as users see it: exit code 2 and a message naming the fix for nan
// gradients (--max_nonfinite_steps), a damaged checkpoint named by --resume_from_checkpoint, and a full disk
// (a small tmpfs, root only); `--resume_from_checkpoint latest` falls back past a damaged checkpoint.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_support.h"

namespace berth {
namespace {

namespace fs = std::filesystem;
using testing::expect_contains;
using testing::run_cli;
using testing::TempDir;

void faults_cli_write_split(const std::string& path, int rows) {
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i)
    out << nlohmann::json{{"text", i % 2 ? "meeting tomorrow review report" : "free prize click here now"},
                          {"label", i % 2 ? "ham" : "spam"}}
               .dump()
        << "\n";
}

std::string faults_cli_train(const TempDir& dir, const std::string& out) {
  return "train --model " + testing::tiny_bert_classifier_dir() + " --train " + dir.file("train.jsonl") +
         " --output-dir " + out + " --max_length 16 --per_device_train_batch_size 4 --seed 3";
}

TEST(TrainFaultsCli, NanGradientsStopWithExitTwoNamingTheStepAndAParameter) {
  TempDir dir;
  faults_cli_write_split(dir.file("train.jsonl"), 16);
  const auto result = run_cli(faults_cli_train(dir, dir.file("out")) +
                              " --max_steps 8 --learning_rate 1e30 --max_nonfinite_steps 2 --save_steps 1");
  ASSERT_EQ(result.exit_code, 2) << result.output;
  expect_contains(
      result.output,
      {"training stopped at step 3", "for 2 optimizer step(s) in a row (steps 2 to 3",
       "first non-finite: the gradient of ", "the last checkpoint is " + dir.file("out/checkpoint-2"),
       "--max_nonfinite_steps (0: never stop)"});
}

// report_to tensorboard with its logging directory blocked by a file: refused before anything is written.
TEST(TrainFaultsCli, ATensorBoardDirectoryThatCannotBeMadeIsRefusedBeforeAnythingIsWritten) {
  TempDir dir;
  faults_cli_write_split(dir.file("train.jsonl"), 8);
  std::ofstream(dir.file("blocked")) << "a file";
  const auto result =
      run_cli(faults_cli_train(dir, dir.file("out")) + " --max_steps 1 --report_to tensorboard", true,
              "TENSORBOARD_LOGGING_DIR=" + dir.file("blocked/tb"));
  ASSERT_EQ(result.exit_code, 2) << result.output;
  expect_contains(result.output, {"TENSORBOARD_LOGGING_DIR (report_to tensorboard's logging directory) " +
                                      dir.file("blocked/tb") + ": cannot create the directory because " +
                                      dir.file("blocked") + " is a file",
                                  "Fix: choose a path under a directory"});
  EXPECT_FALSE(fs::exists(dir.file("out"))) << "written before the refusal";
}

TEST(TrainFaultsCli, ADamagedCheckpointIsRefusedByNameAndSkippedByLatest) {
  TempDir dir;
  faults_cli_write_split(dir.file("train.jsonl"), 16);
  const std::string base = faults_cli_train(dir, dir.file("out")) + " --max_steps 4 --save_steps 2";
  ASSERT_EQ(run_cli(base).exit_code, 0);
  fs::resize_file(dir.file("out/checkpoint-4/model.safetensors"), 100);
  auto result = run_cli(base + " --resume_from_checkpoint " + dir.file("out/checkpoint-4"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  expect_contains(result.output,
                  {"the checkpoint is damaged: model.safetensors has 100 bytes, the manifest says"});
  result = run_cli(base + " --resume_from_checkpoint latest");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  expect_contains(result.output, {"warning: checkpoint " + dir.file("out/checkpoint-4") + " is damaged",
                                  "Resumed at step 2"});
}

TEST(TrainFaultsCli, AFullDiskExitsTwoNamingThePathAndTheSpace) {
  TempDir dir;
  faults_cli_write_split(dir.file("train.jsonl"), 16);
  fs::create_directories(dir.file("small"));
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  if (::mount("tmpfs", dir.file("small").c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "mount -t tmpfs failed: " << std::strerror(errno);
  const auto result = run_cli(faults_cli_train(dir, dir.file("small/out")) + " --max_steps 2 --save_steps 1");
  std::vector<std::string> left;
  for (const auto& entry : fs::recursive_directory_iterator(dir.file("small")))
    if (entry.path().filename().string().find(".tmp") != std::string::npos) left.push_back(entry.path());
  ::umount2(dir.file("small").c_str(), MNT_DETACH);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  expect_contains(result.output,
                  {dir.file("small/out/checkpoint-1"), ": the disk is full: saving checkpoint-1",
                   "are free on that file system", "--save_total_limit 1"});
  EXPECT_TRUE(left.empty()) << left.front();
}

}  // namespace
}  // namespace berth
