// The Trainer when things break: a damaged checkpoint is found before resuming (latest falls back to the
// newest intact one, bitwise as a resume from it), a disk that fills up (a small tmpfs; needs root) fails
// naming the space and keeps the earlier checkpoints, and nan/inf gradients stop the run naming the step and
// the parameter instead of training on nan (HF's logging_nan_inf_filter for the logged loss).
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "berth/model/bert_for_sequence_classification.h"
#include "berth/train/checkpoint_dir.h"
#include "berth/train/checkpoint_manifest.h"
#include "berth/train/disk_full.h"
#include "berth/train/trainer.h"
#include "support/test_support.h"
#include "support/tiny_training.h"

namespace berth::train {
namespace {

namespace fs = std::filesystem;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::synthetic_dataset;
using berth::testing::TempDir;
using berth::testing::tiny_args;
using berth::testing::tiny_config;

struct FaultsRun {
  std::ostringstream console;
  std::unique_ptr<Trainer> trainer;
};

// Stops a run after a step, as a crash would.
struct FaultsStopAt : TrainerCallback {
  explicit FaultsStopAt(int64_t step) : step(step) {}
  void on_step_end(const TrainingArguments&, TrainerState& state, TrainerControl& control) override {
    if (state.global_step == step) control.should_training_stop = true;
  }
  int64_t step;
};

std::unique_ptr<FaultsRun> faults_run(const TrainingArguments& args, int64_t stop_at = 0) {
  auto run = std::make_unique<FaultsRun>();
  TrainerOptions options;
  options.args = args;
  options.model_init = [](const Trial*) {
    return std::shared_ptr<TaskModel>(BertForSequenceClassification(tiny_config(0.1)).ptr());
  };
  options.train_dataset = synthetic_dataset(60, 1);
  if (stop_at > 0) options.callbacks.push_back(std::make_shared<FaultsStopAt>(stop_at));
  options.console = &run->console;
  run->trainer = std::make_unique<Trainer>(std::move(options));
  return run;
}

std::map<std::string, at::Tensor> faults_weights(const Trainer& trainer) {
  std::map<std::string, at::Tensor> out;
  for (const auto& item : trainer.model()->module().named_parameters())
    out[item.key()] = item.value().detach().clone();
  return out;
}

void faults_flip_bit(const std::string& path, std::streamoff at) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(at);
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x01);
  file.seekp(at);
  file.write(&byte, 1);
}

// Checkpoints every 2 steps of the 16-step run; the first run stops after step 4.
TrainingArguments faults_checkpointing_args(const std::string& output_dir) {
  TrainingArguments args = tiny_args(output_dir);
  args.save_strategy = "steps";
  args.save_steps = 2;
  return args;
}

TEST(TrainerFaults, LatestSkipsADamagedCheckpointAndResumesAsFromTheIntactOne) {
  TempDir dir;
  const TrainingArguments args = faults_checkpointing_args(dir.file("out"));
  faults_run(args, 4)->trainer->train();
  ASSERT_TRUE(fs::exists(dir.file("out/checkpoint-4/berth_manifest.json")));
  fs::copy(dir.file("out"), dir.file("copy"), fs::copy_options::recursive);
  faults_flip_bit(dir.file("out/checkpoint-4/optimizer.safetensors"), 1000);

  // Named explicitly, the damaged checkpoint is refused, naming the file and what differs.
  const std::string refused =
      error_text([&] { faults_run(args)->trainer->train(dir.file("out/checkpoint-4")); });
  expect_contains(refused,
                  {"--resume_from_checkpoint " + dir.file("out/checkpoint-4"),
                   ": the checkpoint is damaged: optimizer.safetensors has CRC-32C",
                   "its content changed, e.g. a flipped bit", "Fix: resume from an older checkpoint"});

  auto fallback = faults_run(args);
  fallback->trainer->train(std::string("latest"));
  expect_contains(fallback->console.str(), {"warning: checkpoint " + dir.file("out/checkpoint-4") +
                                                " is damaged (optimizer.safetensors",
                                            "falling back to an older checkpoint", "Resumed at step 2"});

  TrainingArguments copy_args = args;
  copy_args.output_dir = dir.file("copy");
  auto normal = faults_run(copy_args);
  normal->trainer->train(dir.file("copy/checkpoint-2"));
  const auto a = faults_weights(*fallback->trainer);
  const auto b = faults_weights(*normal->trainer);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, tensor] : a) EXPECT_TRUE(torch::equal(tensor, b.at(name))) << name;
}

TEST(TrainerFaults, ATruncatedCheckpointIsRefusedAndOneWithoutAManifestStillResumes) {
  TempDir dir;
  const TrainingArguments args = faults_checkpointing_args(dir.file("out"));
  faults_run(args, 4)->trainer->train();
  const std::string model = dir.file("out/checkpoint-4/model.safetensors");
  const uintmax_t size = fs::file_size(model);
  fs::resize_file(model, size / 2);
  const std::string refused =
      error_text([&] { faults_run(args)->trainer->train(dir.file("out/checkpoint-4")); });
  expect_contains(refused, {"model.safetensors has " + std::to_string(size / 2) +
                            " bytes, the manifest says " + std::to_string(size) + " (truncated)"});

  fs::remove(dir.file("out/checkpoint-2/berth_manifest.json"));
  auto old = faults_run(args);
  EXPECT_EQ(old->trainer->train(dir.file("out/checkpoint-2")).global_step, 16);
  expect_contains(old->console.str(), {"it has no berth_manifest.json", "resuming from it unchecked"});
}

// A tmpfs of `kilobytes` mounted on `dir` for the scope (root only); skipped() says why when it could not be.
class FaultsTmpfs {
 public:
  FaultsTmpfs(const std::string& dir, uint64_t kilobytes) : dir_(dir) {
    fs::create_directories(dir);
    if (::geteuid() != 0) {
      why_ = "mounting a small tmpfs needs root";
      return;
    }
    const std::string options = "size=" + std::to_string(kilobytes) + "k";
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) != 0)
      why_ = std::string("mount -t tmpfs failed: ") + std::strerror(errno);
  }
  ~FaultsTmpfs() {
    if (why_.empty()) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  const std::string& skipped() const { return why_; }

 private:
  std::string dir_;
  std::string why_;
};

TEST(TrainerFaults, AFullDiskFailsNamingTheSpaceAndKeepsTheEarlierCheckpoints) {
  TempDir dir;
  // How much one checkpoint takes on a tmpfs (whole 4 KB pages per file), measured on the real disk.
  faults_run(faults_checkpointing_args(dir.file("probe")), 2)->trainer->train();
  uint64_t checkpoint = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir.file("probe/checkpoint-2")))
    if (entry.is_regular_file()) checkpoint += (entry.file_size() + 4095) / 4096 * 4096;
  // Room for the first checkpoint, half of the second and the run's small files (training_args.json,
  // log.jsonl).
  FaultsTmpfs tmpfs(dir.file("small"), (checkpoint * 3 / 2) / 1024 + 32);
  if (!tmpfs.skipped().empty()) GTEST_SKIP() << tmpfs.skipped();
  const TrainingArguments args = faults_checkpointing_args(dir.file("small/out"));
  const std::string message = error_text([&] { faults_run(args)->trainer->train(); });
  expect_contains(message, {dir.file("small/out/checkpoint-4"), ": the disk is full: saving checkpoint-4",
                            "needs about", "are free on that file system", "No space left on device",
                            "Fix: free space on that disk, keep fewer checkpoints (--save_total_limit 1), or "
                            "pass an --output_dir on a disk with more room"});
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.file("small/out")))
    names.push_back(entry.path().filename().string());
  for (const std::string& name : names) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
  ASSERT_EQ(list_checkpoints(dir.file("small/out")).size(), 1u);
  EXPECT_EQ(check_checkpoint(dir.file("small/out/checkpoint-2")).status, CheckpointCheck::Status::Intact);
  // Loadable: a run resumed from it (on a disk with room) trains to the end.
  fs::copy(dir.file("small/out"), dir.file("roomy"), fs::copy_options::recursive);
  TrainingArguments roomy = args;
  roomy.output_dir = dir.file("roomy");
  EXPECT_EQ(faults_run(roomy)->trainer->train(std::string("latest")).global_step, 16);
}

TEST(TrainerFaults, AFullDiskAtTheFinalSaveNamesTheModel) {
  TempDir dir;
  FaultsTmpfs tmpfs(dir.file("small"), 16);  // the tiny BERT's weights alone take more
  if (!tmpfs.skipped().empty()) GTEST_SKIP() << tmpfs.skipped();
  TrainingArguments args = tiny_args(dir.file("small/out"));
  args.report_to = {"none"};
  const std::string message = error_text([&] { faults_run(args)->trainer->train(); });
  expect_contains(message, {dir.file("small/out"), ": the disk is full: saving the model needs about",
                            "--save_total_limit 1"});
  for (const auto& entry : fs::directory_iterator(dir.file("small/out")))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

// A learning rate of 1e30 sends the weights to ~1e30 in one step; the next forward overflows, so every later
// step's gradients are nan.
TEST(TrainerFaults, NonFiniteGradientsStopTheRunNamingTheStepAndAParameter) {
  TempDir dir;
  TrainingArguments args = faults_checkpointing_args(dir.file("out"));
  args.learning_rate = 1e30;
  args.save_steps = 1;
  args.max_nonfinite_steps = 3;
  auto run = faults_run(args);
  const std::string message = error_text([&] { run->trainer->train(); });
  expect_contains(
      message, {"training stopped at step 4: the gradients were not finite (nan or inf) for 3 "
                "optimizer step(s) in a row (steps 2 to 4; max_nonfinite_steps 3), so their "
                "updates were skipped. At step 4: gradient norm ",
                ", loss not finite, first non-finite: the gradient of ",
                "The weights are those after step 1; the last checkpoint is " + dir.file("out/checkpoint-3"),
                "Fix: lower --learning_rate (it is 1e+30)", "--max_nonfinite_steps (0: never stop)"});
  // Nothing trained on nan: the checkpoints saved during the streak hold step 1's weights, all intact.
  for (const char* name : {"checkpoint-1", "checkpoint-2", "checkpoint-3"})
    EXPECT_EQ(check_checkpoint(dir.file("out/") + name).status, CheckpointCheck::Status::Intact) << name;
  for (const auto& [name, tensor] : faults_weights(*run->trainer))
    EXPECT_TRUE(at::isfinite(tensor).all().item<bool>()) << name;
  // 0: the steps are skipped and the run goes to its end.
  args.output_dir = dir.file("unlimited");
  args.max_nonfinite_steps = 0;
  EXPECT_EQ(faults_run(args)->trainer->train().global_step, 16);
}

// HF's logging_nan_inf_filter (transformers 5.24 Trainer._inner_training_loop): a nan/inf step loss adds
// tr_loss / (1 + global_step - globalstep_last_logged) instead. With step 1's loss L finite and steps 2-4
// nan, tr_loss goes L, L + L/2, 1.5L + 1.5L/3, 2L + 2L/4: the loss logged at step 4 is 2.5L / 4.
TEST(TrainerFaults, LoggingNanInfFilterLogsHfsStandInForANanLoss) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("first"));
  args.learning_rate = 1e30;
  args.max_nonfinite_steps = 0;
  args.max_steps = 4;
  args.logging_steps = 1;
  auto first = faults_run(args);
  first->trainer->train();
  const double step_one_loss = first->trainer->state().log_history.at(0).at("loss");
  ASSERT_TRUE(std::isfinite(step_one_loss));
  // Just after a log tr_loss is 0, so HF logs 0 for a nan step there.
  EXPECT_EQ(first->trainer->state().log_history.at(1).at("loss"), 0.0);

  args.output_dir = dir.file("filtered");
  args.logging_steps = 4;
  auto filtered = faults_run(args);
  filtered->trainer->train();
  EXPECT_NEAR(filtered->trainer->state().log_history.at(0).at("loss"), step_one_loss * 2.5 / 4,
              1e-6 * step_one_loss);

  args.output_dir = dir.file("unfiltered");
  args.logging_nan_inf_filter = false;
  auto unfiltered = faults_run(args);
  unfiltered->trainer->train();
  EXPECT_TRUE(std::isnan(unfiltered->trainer->state().log_history.at(0).at("loss")));
}

}  // namespace
}  // namespace berth::train
