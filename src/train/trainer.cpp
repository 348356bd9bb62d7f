// Trainer: HF transformers' Trainer for every task, with berth's placement guarantees. This file holds
// construction and a run's set-up (inputs, output folder, plan, resume, logs); the step loop, evaluation,
// checkpoints and the search have files of their own.
#include "berth/train/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "berth/core/error.h"
#include "berth/core/runtime.h"
#include "berth/data/data_loader.h"
#include "berth/device/device.h"
#include "berth/dist/model_signature.h"
#include "berth/optim/lr_scheduler.h"
#include "berth/optim/param_groups.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/place.h"
#include "berth/train/checkpoint_dir.h"
#include "berth/train/jsonl_log.h"
#include "berth/train/loss_scaler.h"
#include "berth/train/memory_estimate.h"
#include "berth/train/mixed_precision.h"
#include "berth/train/progress_reporter.h"
#include "berth/train/rng_state.h"
#include "berth/train/tensorboard_callback.h"
#include "train/trainer_internal.h"
#include "train/trainer_run.h"

namespace berth::train {

namespace fs = std::filesystem;
using detail::Clock;
using detail::format_number;
using detail::seconds_since;

Trainer::Trainer(TrainerOptions options)
    : args_(std::move(options.args)),
      model_init_(std::move(options.model_init)),
      train_dataset_(std::move(options.train_dataset)),
      eval_dataset_(std::move(options.eval_dataset)),
      tokenizer_(std::move(options.tokenizer)),
      masking_(options.masking),
      compute_metrics_(std::move(options.compute_metrics)),
      plan_(std::move(options.plan)),
      console_(options.console) {
  args_.validate();
  BERTH_CHECK(model_init_ || options.model,
              "Trainer: needs a model or a model_init, got neither. Fix: set "
              "TrainerOptions::model_init (a function returning a fresh model) or TrainerOptions::model");
  BERTH_CHECK(!(model_init_ && options.model),
              "Trainer: got both a model and a model_init; the model would be "
              "replaced by model_init's at every train(). Fix: pass only one of them");
  // A Trainer built without a plan runs alone: no synchronisation, or ZeRO on one rank when the arguments
  // ask for it (CPU offload alone makes sense there).
  if (!plan_) plan_ = std::make_shared<const RunPlan>(resolve_run_plan(args_, local_process_context(args_)));
  gradient_sync_ = plan_->gradient_sync;
  device_ = plan_->device();
  precision_ = plan_->precision;
  if (is_main_process())
    for (const auto& warning : plan_->warnings) console() << "warning: " << warning << "\n";
  callbacks_.add_callback(std::make_shared<DefaultFlowCallback>());
  // HF's reporting callbacks come after the flow and before the user's.
  const std::vector<std::string> report_to = args_.resolved_report_to();
  if (std::find(report_to.begin(), report_to.end(), "tensorboard") != report_to.end())
    callbacks_.add_callback(std::make_shared<TensorBoardCallback>());
  for (auto& callback : options.callbacks) callbacks_.add_callback(std::move(callback));
  runtime::ThreadOptions threads;
  threads.threads = static_cast<int>(args_.threads);
  runtime::configure_threads(threads);
  run_dir_ = args_.output_dir;
  if (model_init_) {
    model_ = build_model(nullptr);
  } else {
    model_ = options.model;
    place_model();
  }
}

Trainer::~Trainer() = default;

std::ostream& Trainer::console() const { return console_ ? *console_ : std::cout; }

bool Trainer::is_main_process() const { return gradient_sync_->rank() == 0; }

dist::Communicator& Trainer::comm() const { return gradient_sync_->communicator(); }

// Rank 0 does the work (files belong to one writer); every rank then learns whether it failed and throws, so
// a refused output directory or a failed save stops the whole run at once instead of leaving the other ranks
// waiting in their next collective. With several ranks this is also the barrier around the work.
void Trainer::on_main_process(const std::string& what, const std::function<void()>& work) {
  if (comm().world_size() == 1) {
    work();
    return;
  }
  std::exception_ptr failure;
  std::string message;
  if (is_main_process()) {
    try {
      work();
    } catch (const std::exception& e) {
      failure = std::current_exception();
      message = e.what();
      if (message.empty()) message = "unknown error";
    }
  }
  message = comm().broadcast_string(message, 0, what);
  if (failure) std::rethrow_exception(failure);
  if (!message.empty())
    BERTH_FAIL("rank 0 failed while ", what, ", so rank ", comm().rank(), " stops too: ", message);
}

void Trainer::add_callback(std::shared_ptr<TrainerCallback> callback) {
  callbacks_.add_callback(std::move(callback));
}

void Trainer::set_out_of_memory_hook_for_testing(std::function<void(int64_t)> hook) {
  out_of_memory_hook_ = std::move(hook);
}

void Trainer::set_checkpoint_hook_for_testing(std::function<void(const std::string&)> hook) {
  checkpoint_hook_ = std::move(hook);
}

std::shared_ptr<TaskModel> Trainer::build_model(const Trial* trial) {
  // HF seeds before model_init, so the same seed gives the same initial weights on every run and trial.
  torch::manual_seed(static_cast<uint64_t>(args_.seed));
  std::shared_ptr<TaskModel> model = model_init_(trial);
  BERTH_CHECK(model != nullptr,
              "Trainer: model_init returned no model (a null pointer). Fix: return a constructed task model, "
              "e.g. BertForSequenceClassification(config).ptr()");
  model_ = model;
  place_model();
  return model_;
}

// Whatever device the model arrived on, it ends up on the run's device (move) or the user gets the report
// of what is where (strict).
void Trainer::place_model() {
  const PlacementReport report = place(model_->module(), device_, parse_placement_policy(args_.placement));
  if (is_main_process() && report.moved_anything()) console() << report.summary() << "\n";
}

void Trainer::create_optimizer_and_scheduler(int64_t max_steps) {
  dist::OptimizerSpec spec;
  spec.groups = optim::hf_param_groups(model_->module(), args_.weight_decay);
  spec.adam.lr = args_.learning_rate;
  spec.adam.beta1 = args_.adam_beta1;
  spec.adam.beta2 = args_.adam_beta2;
  spec.adam.eps = args_.adam_epsilon;
  gradient_sync_->optimizer().create(model_->module(), spec);
  scheduler_ = std::make_unique<optim::LrScheduler>(args_.learning_rate, plan_->schedule(args_, max_steps));
  loss_scaler_.reset();
  if (precision_.precision == Precision::fp16)
    loss_scaler_ = std::make_unique<LossScaler>(precision_.loss_scale, gradient_sync_->rank());
}

// After the first step: the ZeRO paper's estimate for this run beside what this rank held at the step's
// peak, in the console and log.jsonl.
void Trainer::log_memory(int64_t num_params) {
  const MemoryEstimate estimate = plan_->estimate_memory(num_params, largest_block_parameters(*model_));
  const dist::MemoryFootprint held = gradient_sync_->memory_footprint(model_->module());
  if (!is_main_process()) return;
  console() << "memory per rank (" << gradient_sync_->strategy() << ", " << to_string(precision_.precision)
            << "):\n"
            << format_memory_table(estimate, held);
  LogEntry entry;
  entry["memory_estimated_bytes"] = static_cast<double>(estimate.total());
  entry["memory_estimated_parameters"] = static_cast<double>(estimate.parameters);
  entry["memory_estimated_gradients"] = static_cast<double>(estimate.gradients);
  entry["memory_estimated_optimizer_states"] = static_cast<double>(estimate.optimizer_states);
  entry["memory_held_bytes"] = static_cast<double>(held.total());
  entry["memory_held_parameters"] = static_cast<double>(held.parameters);
  entry["memory_held_gradients"] = static_cast<double>(held.gradients);
  entry["memory_held_optimizer_states"] = static_cast<double>(held.optimizer_states);
  entry["step"] = static_cast<double>(state_.global_step + 1);
  if (jsonl_log_) jsonl_log_->write(entry);  // the console has the table; the log history stays HF's
}

void Trainer::log(LogEntry entry) {
  entry["epoch"] = state_.epoch;
  entry["step"] = static_cast<double>(state_.global_step);
  state_.log_history.push_back(entry);
  callbacks_.on_log(args_, state_, control_, entry);
  if (!is_main_process()) return;
  if (jsonl_log_) jsonl_log_->write(entry);
  if (progress_) progress_->log(entry);
}

void Trainer::check_device_holds_data(const char* what) const {
  BERTH_CHECK(device_.type() != c10::kMeta, what,
              ": the run's device is 'meta', which holds no data, so nothing "
              "can be computed on it. Fix: --device cpu, cuda or auto");
}

TrainOutput Trainer::train_once(const std::optional<std::string>& resume, const Trial* trial) {
  Run run = plan_run(resume, trial);
  callbacks_.on_train_begin(args_, state_, control_);
  evaluate_on_start();
  run.start = Clock::now();
  run.start_step = run.last_logged_step = state_.global_step;
  model_->module().train();
  // HF's Trainer turns activation checkpointing on (or leaves it off) at the start of train().
  BERTH_CHECK(
      !args_.gradient_checkpointing || model_->supports_gradient_checkpointing(),
      "gradient_checkpointing is on, but the model (", model_->info().architecture,
      ") does not checkpoint its layers: only berth's model families do. Fix: turn gradient_checkpointing "
      "off for this model, or implement TaskModel::set_gradient_checkpointing for it");
  model_->set_gradient_checkpointing({args_.gradient_checkpointing, args_.checkpoint_every_n_layers()});
  for (int64_t epoch = run.epochs_trained; epoch < run.num_epochs && !control_.should_training_stop; ++epoch)
    run_epoch(run, epoch);
  return finish_run(run);
}

void Trainer::check_train_inputs(const std::optional<std::string>& resume) {
  check_device_holds_data("Trainer::train");
  BERTH_CHECK(train_dataset_ && train_dataset_->size() > 0,
              "Trainer::train: no training data (the train dataset is missing or empty). Fix: pass "
              "TrainerOptions::train_dataset with at least one example");
  // Ranks that disagree on these would train different things or deadlock in mismatched collectives.
  if (comm().world_size() > 1)
    dist::check_agreement(comm(),
                          {{"strategy", gradient_sync_->strategy()},
                           {"per_device_train_batch_size", std::to_string(args_.per_device_train_batch_size)},
                           {"gradient_accumulation_steps", std::to_string(args_.gradient_accumulation_steps)},
                           {"seed", std::to_string(args_.seed)},
                           {"data_seed", std::to_string(args_.resolved_data_seed())},
                           {"learning_rate", format_number(args_.learning_rate)},
                           {"max_steps", std::to_string(args_.max_steps)},
                           {"num_train_epochs", format_number(args_.num_train_epochs)},
                           {"max_grad_norm", format_number(args_.max_grad_norm)},
                           {"training examples", std::to_string(train_dataset_->size())},
                           {"resume_from_checkpoint", resume.value_or("")}},
                          "the training arguments");
}

// Refuses to mix a new run into an old one's checkpoints (HF's overwrite_output_dir).
void Trainer::prepare_output_dir(bool resuming) {
  on_main_process("preparing the output directory " + run_dir_, [&] {
    if (!resuming && !args_.overwrite_output_dir && fs::exists(run_dir_)) {
      const auto existing = list_checkpoints(run_dir_);
      BERTH_CHECK(
          existing.empty(), "output directory ", run_dir_, " already holds ", existing.size(),
          " checkpoint(s) (the latest is ", existing.back().second,
          "). Fix: --resume_from_checkpoint latest "
          "to continue that run, --overwrite_output_dir to train again over it, or another --output_dir");
    }
    fs::create_directories(run_dir_);
    remove_stale_temporaries(run_dir_);
    args_.save(run_dir_ + "/training_args.json");
  });
}

// Everything before the first batch: checks, the output directory, a fresh model, the loader, HF's step
// arithmetic, the optimizer and schedule, a resumed checkpoint, the logs.
Trainer::Run Trainer::plan_run(const std::optional<std::string>& resume, const Trial* trial) {
  check_train_inputs(resume);
  prepare_output_dir(resume.has_value());
  Run run;
  run.trial = trial;
  run.resume = resume;
  if (model_init_) build_model(trial);  // HF: a fresh model for every run and trial
  warn_about_label_smoothing();
  // Counted before prepare(): ZeRO-3 leaves each rank only a piece of every parameter.
  // HF's floating_point_ops: 6 × tokens × parameters outside the embeddings (forward + backward).
  run.flops_per_token = 6 * non_embedding_parameters(*model_);
  for (const auto& p : model_->module().parameters())
    if (p.requires_grad()) run.num_params += p.numel();
  gradient_sync_->reducer().prepare(model_->module());
  for (const auto& p : model_->module().parameters())
    if (p.requires_grad()) run.params.push_back(p);

  data::DataLoaderOptions loader_options;
  loader_options.batch_size = static_cast<size_t>(args_.per_device_train_batch_size);
  loader_options.shuffle = true;
  loader_options.seed = static_cast<uint64_t>(args_.resolved_data_seed());
  loader_options.drop_last = args_.dataloader_drop_last;
  loader_options.group_by_length = args_.group_by_length;
  loader_options.rank = static_cast<size_t>(gradient_sync_->rank());
  loader_options.world_size = static_cast<size_t>(gradient_sync_->world_size());
  loader_options.prefetch = static_cast<size_t>(args_.dataloader_prefetch);
  if (tokenizer_) loader_options.pad_token_id = tokenizer_->pad_token_id();
  set_task_labels(loader_options);
  run.loader = std::make_unique<data::DataLoader>(*train_dataset_, loader_options);
  BERTH_CHECK(run.loader->size() > 0, "Trainer::train: ", train_dataset_->size(),
              " training examples make no batch of ", args_.per_device_train_batch_size,
              " with dataloader_drop_last. Fix: a smaller "
              "--per_device_train_batch_size, or --dataloader_drop_last false");

  // HF's step arithmetic: optimizer steps per epoch, then max_steps from epochs (or epochs from max_steps).
  run.accumulation = args_.gradient_accumulation_steps;
  run.batches_per_epoch = static_cast<int64_t>(run.loader->size());
  run.steps_per_epoch = std::max<int64_t>(run.batches_per_epoch / run.accumulation, 1);
  if (args_.max_steps > 0) {
    run.max_steps = args_.max_steps;
    run.num_epochs = run.max_steps / run.steps_per_epoch + (run.max_steps % run.steps_per_epoch > 0 ? 1 : 0);
  } else {
    run.max_steps =
        static_cast<int64_t>(std::ceil(args_.num_train_epochs * static_cast<double>(run.steps_per_epoch)));
    run.num_epochs = static_cast<int64_t>(std::ceil(args_.num_train_epochs));
  }
  create_optimizer_and_scheduler(run.max_steps);
  reset_state(run);
  if (resume) {
    const std::string checkpoint = resolve_resume(*resume);
    resume_from(checkpoint);
    run.resumed_rng = load_rng_state(checkpoint + "/rng_state.safetensors");
  }
  run.epochs_trained = state_.global_step / run.steps_per_epoch;
  run.batches_to_skip = (state_.global_step % run.steps_per_epoch) * run.accumulation;
  if (is_main_process()) open_logs(run);
  return run;
}

std::string Trainer::resolve_resume(const std::string& value) {
  std::string checkpoint;
  on_main_process("checking the checkpoint to resume from", [&] {
    std::vector<std::string> warnings;
    checkpoint = resolve_resume_checkpoint(run_dir_, value, &warnings);
    for (const std::string& warning : warnings) console() << "warning: " << warning << "\n";
  });
  return comm().broadcast_string(checkpoint, 0, "the checkpoint to resume from");
}

void Trainer::reset_state(Run& run) {
  state_ = TrainerState();
  state_.max_steps = run.max_steps;
  state_.num_train_epochs = run.num_epochs;
  state_.train_batch_size = args_.per_device_train_batch_size;
  state_.logging_steps = args_.resolved_logging_steps(run.max_steps);
  state_.eval_steps = args_.resolved_eval_steps(run.max_steps);
  state_.save_steps = args_.resolved_save_steps(run.max_steps);
  state_.is_world_process_zero = state_.is_local_process_zero = is_main_process();
  if (run.trial) state_.trial_name = "run-" + std::to_string(run.trial->number);
  state_.is_hyper_param_search = run.trial != nullptr;
  control_ = TrainerControl();
  last_confusion_.clear();
  last_saved_step_ = -1;
}

// Rank 0's log.jsonl (report_to jsonl), progress bar and HF's banner.
void Trainer::open_logs(const Run& run) {
  const std::vector<std::string> report_to = args_.resolved_report_to();
  if (std::find(report_to.begin(), report_to.end(), "jsonl") != report_to.end()) {
    jsonl_log_ = std::make_unique<JsonlLog>(run_dir_ + "/log.jsonl", /*append=*/run.resume.has_value());
    // A run that went on past its last checkpoint logged steps the resumed run will log again.
    if (run.resume) jsonl_log_->drop_after_step(state_.global_step);
    if (!jsonl_log_->note().empty()) console() << jsonl_log_->note() << "\n";
  } else {
    jsonl_log_.reset();
  }
  ProgressOptions progress_options;
  progress_options.total_steps = run.max_steps;
  progress_options.steps_per_epoch = run.steps_per_epoch;
  progress_options.enabled = !args_.disable_tqdm;
  if (console_) progress_options.tty = false;
  progress_ = std::make_unique<ProgressReporter>(console(), progress_options);
  std::ostringstream banner;
  banner << "***** Running training *****\n"
         << "  Num examples = " << train_dataset_->size() << "\n"
         << "  Num Epochs = " << run.num_epochs << "\n"
         << "  Instantaneous batch size per device = " << args_.per_device_train_batch_size << "\n"
         << "  Total train batch size (w. parallel, distributed & accumulation) = "
         << args_.per_device_train_batch_size * run.accumulation * gradient_sync_->world_size() << "\n"
         << "  Gradient Accumulation steps = " << run.accumulation << "\n"
         << "  Total optimization steps = " << run.max_steps << "\n"
         << "  Number of trainable parameters = " << run.num_params << "\n"
         << "  Device = " << device_name(device_)
         << ", threads = " << runtime::thread_state().intra_op_threads;
  if (run.resume)
    banner << "\n  Resumed at step " << state_.global_step << " (epoch " << run.epochs_trained << ")";
  progress_->message(banner.str());
}

}  // namespace berth::train
