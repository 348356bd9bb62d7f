// Trainer: HF transformers' Trainer over any TaskModel, with berth's placement guarantees.
#pragma once

#include "berth/data/data_loader.h"
#include "berth/data/tokenized_dataset.h"
#include "berth/dist/gradient_sync.h"
#include "berth/model/task_model.h"
#include "berth/placement/batch_check.h"
#include "berth/tasks/prediction_output.h"
#include "berth/tokenizer/tokenizer.h"
#include "berth/train/callbacks.h"
#include "berth/train/hyperparameter_search.h"
#include "berth/train/precision_options.h"
#include "berth/train/run_plan.h"
#include "berth/train/trainer_state.h"
#include "berth/train/training_arguments.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace berth::optim {
class AdamW;
class LrScheduler;
}  // namespace berth::optim

namespace berth::train {

class ProgressReporter;
class JsonlLog;
class LossScaler;

// One trial of a hyperparameter search: its number and the arguments it sets (name -> value text).
struct Trial {
  size_t number = 0;
  std::map<std::string, std::string> params;
};

// Builds a fresh model. Called at construction, again at every train() and for every trial (with the trial;
// nullptr outside a search). It may return the model on any device: the Trainer places it (args.placement).
// A TORCH_MODULE holder gives its pointer: `return BertForSequenceClassification(config).ptr();`.
using ModelInit = std::function<std::shared_ptr<TaskModel>(const Trial* trial)>;

using tasks::ComputeMetrics;
using tasks::EvalPrediction;
using tasks::PredictionOutput;

struct TrainOutput {
  int64_t global_step = 0;
  double training_loss = 0;
  std::map<std::string, double> metrics;  // train_runtime, train_samples_per_second, train_loss, epoch...
};

struct BestRun {
  size_t trial = 0;
  double objective = 0;
  std::map<std::string, std::string> params;
  std::map<std::string, double> metrics;
};

struct TrainerOptions {
  TrainingArguments args;
  ModelInit model_init;              // either this...
  std::shared_ptr<TaskModel> model;  // ...or a model (used as given, placed on the run's device)
  std::shared_ptr<const data::TokenizedDataset> train_dataset;
  std::shared_ptr<const data::TokenizedDataset> eval_dataset;
  // Saved with every checkpoint and the final model, so they are ready for `berth predict`; its pad token
  // pads batches (else id 0).
  std::optional<tokenizer::Tokenizer> tokenizer;
  // A masked LM's masking (run_mlm.py's mlm_probability and HF's collator defaults); its mask token and
  // vocabulary size come from `tokenizer`, which a masked LM therefore needs.
  data::MaskTokensOptions masking;
  ComputeMetrics compute_metrics;
  std::vector<std::shared_ptr<TrainerCallback>> callbacks;
  // The run's device, process group, parallel strategy, precision and schedule, resolved once
  // (resolve_run_plan). null: this process alone on args.device, with what args.deepspeed / args.fsdp ask.
  std::shared_ptr<const RunPlan> plan;
  // Where console lines go (progress bar, logs); null = std::cout.
  std::ostream* console = nullptr;
};

// accelerate's find_executable_batch_size step (pinned accelerate 1.15): int(batch_size * 0.9).
int64_t next_executable_batch_size(int64_t batch_size);

class Trainer {
 public:
  // Validates the arguments, resolves the device, runs model_init (or takes the model) and places it.
  // Throws berth::Error for invalid arguments and PlacementError under placement=strict when the model is
  // elsewhere.
  explicit Trainer(TrainerOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // HF's train(): the whole loop, with checkpoints, logging, evaluation, and, at the end, the best model
  // (load_best_model_at_end) and the final model saved to output_dir in HF format with the tokenizer.
  // `resume_from_checkpoint`: a checkpoint directory or "latest"; unset = args.resume_from_checkpoint.
  // auto_find_batch_size: an out-of-memory error (c10::OutOfMemoryError) starts the run again at
  // int(0.9 x the batch size), as accelerate's find_executable_batch_size, until it fits or reaches 0.
  TrainOutput train(const std::optional<std::string>& resume_from_checkpoint = std::nullopt,
                    const Trial* trial = nullptr);

  // Loss, accuracy, precision/recall/F1 (binary and macro) and the user's metrics, prefixed "eval_" (or
  // `prefix` + "_"), over `dataset` (the eval dataset by default).
  std::map<std::string, double> evaluate(const data::TokenizedDataset* dataset = nullptr,
                                         const std::string& prefix = "eval");
  PredictionOutput predict(const data::TokenizedDataset& dataset, const std::string& prefix = "test");

  // Trials over `space`, each a fresh model_init(trial) run with args.seed; objective = the eval metric
  // `objective_metric` (default: metric_for_best_model, else eval_loss). Writes output_dir/hp_search.jsonl
  // (one line per trial) and output_dir/best_trial_args.json. Needs model_init.
  BestRun hyperparameter_search(const SearchSpace& space, size_t n_trials, Direction direction,
                                SearchMethod method = SearchMethod::Random,
                                const std::string& objective_metric = "");

  // config.json (with the dataset's labels), model.safetensors, the tokenizer files and training_args.json.
  void save_model(const std::string& dir = "");
  // HF's save_metrics: output_dir/<split>_results.json, merged into all_results.json.
  void save_metrics(const std::string& split, const std::map<std::string, double>& metrics);
  // output_dir/report.html from the log history, plus `metrics` (e.g. test results) and a confusion matrix.
  void write_report(const std::map<std::string, double>& metrics = {},
                    const std::vector<std::vector<int64_t>>& confusion = {});

  std::shared_ptr<TaskModel> model() const { return model_; }
  const TrainingArguments& args() const { return args_; }
  const TrainerState& state() const { return state_; }
  c10::Device device() const { return device_; }
  void add_callback(std::shared_ptr<TrainerCallback> callback);
  // Called inside each checkpoint's temporary directory after its files are written and before it is
  // renamed into place: tests make it throw to simulate a crash during a save.
  void set_checkpoint_hook_for_testing(std::function<void(const std::string& tmp_dir)> hook);
  // Called before every training forward with the per-device batch size: tests throw c10::OutOfMemoryError
  // from it to exercise auto_find_batch_size on a machine that has memory to spare.
  void set_out_of_memory_hook_for_testing(std::function<void(int64_t batch_size)> hook);

 private:
  struct Run;  // what one train() call's steps share
  std::shared_ptr<TaskModel> build_model(const Trial* trial);
  void place_model();
  void check_train_inputs(const std::optional<std::string>& resume);
  void prepare_output_dir(bool resuming);
  TrainOutput train_once(const std::optional<std::string>& resume, const Trial* trial);
  // An evaluation inside train(): an out-of-memory error there names the eval batch size, which
  // auto_find_batch_size does not change (HF).
  std::map<std::string, double> evaluate_while_training();
  Run plan_run(const std::optional<std::string>& resume, const Trial* trial);
  void reset_state(Run& run);
  void open_logs(const Run& run);
  void run_epoch(Run& run, int64_t epoch);
  void micro_step(Run& run, const Batch& cpu_batch, bool step_ends);
  void optimizer_step(Run& run, int64_t epoch, int64_t batch_index);
  std::string first_nonfinite_gradient() const;
  void check_nonfinite_step(Run& run, bool nonfinite, const std::string& culprit);
  TrainOutput finish_run(Run& run);
  void create_optimizer_and_scheduler(int64_t max_steps);
  // HF's compute_loss: LabelSmoother's loss of `logits` against `labels` under label_smoothing_factor
  // where HF applies it, else `model_loss` (computed from logits and labels when undefined).
  at::Tensor task_loss(const at::Tensor& logits, const at::Tensor& labels, const at::Tensor& model_loss);
  // Whether task_loss reads the logits (label smoothing applies); else the forwards that feed it run
  // loss-only (LossOnlyForward).
  bool loss_reads_logits() const;
  void warn_about_label_smoothing();
  // eval_on_start, and reduce_lr_on_plateau's step on the evaluated metric (trainer_schedule.cpp).
  void evaluate_on_start();
  void step_schedule_on_metrics(const std::map<std::string, double>& metrics);
  void log_memory(int64_t num_params);
  void maybe_log_save_evaluate(Run& run);
  bool update_best_metric(const std::map<std::string, double>& metrics);
  std::string save_checkpoint(const Trial* trial);
  void write_optimizer_state(const std::string& staging, const std::string& step_name);
  // The checkpoint --resume_from_checkpoint names, checked by rank 0 (its warnings on the console), the
  // same on every rank.
  std::string resolve_resume(const std::string& value);
  void resume_from(const std::string& checkpoint_dir);
  void load_model_weights(const std::string& dir);
  void log(LogEntry entry);
  bool is_main_process() const;
  dist::Communicator& comm() const;
  void on_main_process(const std::string& what, const std::function<void()>& work);
  void check_device_holds_data(const char* what) const;
  std::ostream& console() const;
  data::DataLoaderOptions eval_loader_options() const;
  // The labels the model's task trains on: the dataset's, the input ids (causal LM) or masked ids (masked
  // LM).
  void set_task_labels(data::DataLoaderOptions& options) const;
  PredictionOutput predict_classes(const data::TokenizedDataset& dataset, const std::string& prefix);
  PredictionOutput predict_language_model(const data::TokenizedDataset& dataset, const std::string& prefix);
  // Token classification (trainer_predict_tokens.cpp): logits (N, T, C) padded with -100, seqeval metrics.
  PredictionOutput predict_tokens(const data::TokenizedDataset& dataset, const std::string& prefix);

  TrainingArguments args_;
  ModelInit model_init_;
  std::shared_ptr<const data::TokenizedDataset> train_dataset_;
  std::shared_ptr<const data::TokenizedDataset> eval_dataset_;
  std::optional<tokenizer::Tokenizer> tokenizer_;
  data::MaskTokensOptions masking_;
  ComputeMetrics compute_metrics_;
  CallbackHandler callbacks_;
  std::shared_ptr<const RunPlan> plan_;
  std::shared_ptr<dist::GradientSync> gradient_sync_;  // plan_'s
  std::ostream* console_ = nullptr;
  c10::Device device_{c10::kCPU};
  std::shared_ptr<TaskModel> model_;
  std::unique_ptr<optim::LrScheduler> scheduler_;
  PrecisionOptions precision_;
  std::unique_ptr<LossScaler> loss_scaler_;  // fp16 only
  std::unique_ptr<ProgressReporter> progress_;
  std::unique_ptr<JsonlLog> jsonl_log_;
  TrainerState state_;
  TrainerControl control_;
  std::vector<std::vector<int64_t>> last_confusion_;
  std::function<void(const std::string&)> checkpoint_hook_;
  std::function<void(int64_t)> out_of_memory_hook_;
  std::string run_dir_;  // output_dir, or output_dir/run-N during a search
  int64_t last_saved_step_ = -1;
};

}  // namespace berth::train
