// Trainer: HF transformers' Trainer for sequence classification, with berth's placement guarantees. This
// file holds construction and train(); evaluation, checkpoints and the search have files of their own.
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

namespace berth::train {

namespace fs = std::filesystem;
using detail::Clock;
using detail::format_number;
using detail::seconds_since;

namespace {

// The (B, T) tokens of a batch, for the FLOP count HF reports as total_flos.
int64_t batch_tokens(const Batch& batch) {
  auto it = batch.find("input_ids");
  return it == batch.end() ? 0 : it->second.numel();
}

}  // namespace

// What one train() call's steps share: HF's step arithmetic, the loader, and the running sums.
struct Trainer::Run {
  const Trial* trial = nullptr;
  std::optional<std::string> resume;
  std::unique_ptr<data::DataLoader> loader;
  int64_t accumulation = 1;
  int64_t batches_per_epoch = 0;
  int64_t steps_per_epoch = 0;
  int64_t max_steps = 0;
  int64_t num_epochs = 0;
  int64_t flops_per_token = 0;
  int64_t num_params = 0;          // trainable, counted before ZeRO-3 partitions them
  std::vector<at::Tensor> params;  // trainable
  std::optional<RngState> resumed_rng;
  int64_t epochs_trained = 0;
  int64_t batches_to_skip = 0;
  Clock::time_point start;
  int64_t start_step = 0;
  double total_loss = 0;  // sum over optimizer steps of the mean micro-batch loss, for train_loss
  double step_loss = 0;
  double loss_since_log = 0;
  int64_t last_logged_step = 0;
  double grad_norm = 0;
  int64_t samples_seen = 0;
  bool step_loss_finite = true;  // every micro-batch loss of the current step was finite
  int64_t nonfinite_streak = 0;  // optimizer steps in a row with non-finite gradients
  int64_t nonfinite_first = 0;   // the first step of that streak
};

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

void Trainer::run_epoch(Run& run, int64_t epoch) {
  run.loader->set_epoch(static_cast<uint64_t>(epoch));
  callbacks_.on_epoch_begin(args_, state_, control_);
  int64_t batch_index = -1;
  run.step_loss = 0;
  for (const Batch& cpu_batch : *run.loader) {
    ++batch_index;
    if (run.batches_to_skip > 0) {  // resuming mid-epoch: these batches were trained on before the checkpoint
      --run.batches_to_skip;
      continue;
    }
    if (run.resumed_rng) {  // the first step after a resume draws exactly what the uninterrupted run drew
      restore_rng_state(*run.resumed_rng);
      run.resumed_rng.reset();
    }
    const bool last_in_epoch = batch_index + 1 == run.batches_per_epoch;
    const bool step_ends = (batch_index + 1) % run.accumulation == 0 || last_in_epoch;
    if (batch_index % run.accumulation == 0) callbacks_.on_step_begin(args_, state_, control_);
    micro_step(run, cpu_batch, step_ends);
    if (!step_ends) continue;
    optimizer_step(run, epoch, batch_index);
    if (control_.should_epoch_stop || control_.should_training_stop) break;
  }
  callbacks_.on_epoch_end(args_, state_, control_);
  maybe_log_save_evaluate(run);
}

// Forward and backward of one batch; its loss is divided by the accumulation steps.
void Trainer::micro_step(Run& run, const Batch& cpu_batch, bool step_ends) {
  if (out_of_memory_hook_) out_of_memory_hook_(args_.per_device_train_batch_size);
  const Batch batch = place_batch(cpu_batch, device_, PlacementPolicy::Move);
  TaskOutput output;
  {
    const AutocastGuard autocast(precision_.precision, device_.type());
    output = model_->forward_batch(batch);
  }
  check_tensor_on(output.loss, "loss", device_);
  const at::Tensor task = task_loss(output.logits, batch_input(batch, "labels"), output.loss);
  const at::Tensor loss = task.to(at::kFloat) / static_cast<double>(run.accumulation);
  gradient_sync_->reducer().begin_backward(step_ends);
  (loss_scaler_ ? loss * loss_scaler_->scale() : loss).backward();
  const double micro_loss = loss.item<double>();
  if (!std::isfinite(micro_loss)) run.step_loss_finite = false;
  if (std::isfinite(micro_loss) || !args_.logging_nan_inf_filter) {
    run.step_loss += micro_loss;
  } else {
    // HF's logging_nan_inf_filter (Trainer._inner_training_loop): the losses since the last log, averaged
    // over the steps they span (this one included), stand in for a nan/inf loss.
    run.step_loss += (run.loss_since_log + run.step_loss) /
                     static_cast<double>(1 + state_.global_step - run.last_logged_step);
  }
  run.samples_seen += batch.at("input_ids").size(0);
  state_.total_flos += static_cast<double>(run.flops_per_token * batch_tokens(batch));
  state_.num_input_tokens_seen += batch_tokens(batch);
}

// The step that ends an accumulation: reduce, clip, update, schedule, then HF's log/save/evaluate points.
void Trainer::optimizer_step(Run& run, int64_t epoch, int64_t batch_index) {
  dist::StepOptions step_options;
  step_options.lr = scheduler_->lr();
  step_options.max_grad_norm = plan_->max_grad_norm(args_);
  step_options.loss_scale = loss_scaler_ ? loss_scaler_->scale() : 1.0;
  // A non-finite update would make every weight nan: berth skips it, with or without a loss scaler.
  step_options.skip_on_overflow = true;
  // The step that may stop the run names its first non-finite gradient, looked up before step() drops them.
  const bool may_stop =
      args_.max_nonfinite_steps > 0 && run.nonfinite_streak + 1 >= args_.max_nonfinite_steps;
  const std::string culprit = may_stop ? first_nonfinite_gradient() : std::string();
  const dist::StepResult stepped = gradient_sync_->optimizer().step(run.params, step_options);
  run.grad_norm = stepped.grad_norm;
  if (loss_scaler_) {
    const LossScaleUpdate update = loss_scaler_->update(stepped.overflow);
    if (update.skipped && is_main_process()) {
      if (progress_) progress_->message(update.log_line);
      LogEntry entry;
      entry["loss_scale"] = update.new_scale;
      entry["skipped_step"] = 1;
      log(entry);
    }
  }
  // A dynamic loss scaler's overflows are its business (it stops at min_loss_scale); others count.
  check_nonfinite_step(run, stepped.overflow && !(loss_scaler_ && loss_scaler_->dynamic()), culprit);
  // DeepSpeed leaves the schedule where it was when an overflow skipped the step.
  if (!stepped.overflow) scheduler_->step();
  if (state_.global_step == run.start_step) log_memory(run.num_params);
  ++state_.global_step;
  state_.epoch = static_cast<double>(epoch) +
                 static_cast<double>(batch_index + 1) / static_cast<double>(run.batches_per_epoch);
  run.total_loss += run.step_loss;
  run.loss_since_log += run.step_loss;
  run.step_loss = 0;
  callbacks_.on_step_end(args_, state_, control_);
  if (progress_) {
    const double elapsed = seconds_since(run.start);
    // Over all ranks, as HF's train_samples_per_second.
    const double samples = static_cast<double>(run.samples_seen * comm().world_size());
    progress_->update(state_.global_step, state_.epoch, elapsed > 0 ? samples / elapsed : 0.0);
  }
  maybe_log_save_evaluate(run);
}

// The first parameter whose gradient (else whose value) holds a nan or inf, on this rank.
std::string Trainer::first_nonfinite_gradient() const {
  torch::NoGradGuard no_grad;
  const auto named = model_->module().named_parameters();
  for (const auto& item : named) {
    const at::Tensor& grad = item.value().grad();
    if (grad.defined() && !at::isfinite(grad).all().item<bool>()) return "the gradient of " + item.key();
  }
  for (const auto& item : named)
    if (item.value().numel() > 0 && !at::isfinite(item.value()).all().item<bool>())
      return item.key() + " itself (its value is not finite)";
  return "none held by rank " + std::to_string(comm().rank()) +
         " (under ZeRO another rank holds the gradient shards)";
}

// Counts optimizer steps in a row whose gradients were not finite (their updates were skipped) and stops
// the run at max_nonfinite_steps, naming the step and the parameter, instead of training on nan.
void Trainer::check_nonfinite_step(Run& run, bool nonfinite, const std::string& culprit) {
  const bool step_loss_finite = run.step_loss_finite;
  run.step_loss_finite = true;
  if (!nonfinite) {
    run.nonfinite_streak = 0;
    return;
  }
  const int64_t step = state_.global_step + 1;
  if (run.nonfinite_streak++ == 0) run.nonfinite_first = step;
  if (is_main_process() && progress_)
    progress_->message("step " + std::to_string(step) + ": the gradients are not finite (norm " +
                       format_number(run.grad_norm) + "), the update is skipped (" +
                       std::to_string(run.nonfinite_streak) + " in a row)");
  if (args_.max_nonfinite_steps == 0 || run.nonfinite_streak < args_.max_nonfinite_steps) return;
  const std::optional<std::string> last_checkpoint = latest_checkpoint(run_dir_);
  BERTH_FAIL("training stopped at step ", step, ": the gradients were not finite (nan or inf) for ",
             run.nonfinite_streak, " optimizer step(s) in a row (steps ", run.nonfinite_first, " to ", step,
             "; max_nonfinite_steps ", args_.max_nonfinite_steps,
             "), so their updates were skipped. At step ", step, ": gradient norm ",
             format_number(run.grad_norm), ", loss ", step_loss_finite ? "finite" : "not finite",
             ", first non-finite: ", culprit, ". The weights are those after step ", run.nonfinite_first - 1,
             "; the last checkpoint is ", last_checkpoint.value_or("none"),
             ". Fix: lower --learning_rate (it is ", format_number(args_.learning_rate),
             "), warm up (--warmup_ratio 0.1) or clip (--max_grad_norm 1.0), check the training data for "
             "broken examples, or raise --max_nonfinite_steps (0: never stop)");
}

// After the last step: the whole model on every rank, the best checkpoint's weights when asked, HF's train
// metrics, and the final model saved.
TrainOutput Trainer::finish_run(Run& run) {
  const double runtime = seconds_since(run.start);
  // After train() the model is whole on every rank (ZeRO-3 held pieces), ready to save, evaluate or predict.
  gradient_sync_->residency().gather();
  if (args_.load_best_model_at_end && state_.best_model_checkpoint &&
      fs::exists(*state_.best_model_checkpoint + "/model.safetensors")) {
    if (is_main_process())
      progress_->message("Loading best model from " + *state_.best_model_checkpoint +
                         " (score: " + format_number(state_.best_metric.value_or(0)) + ").");
    load_model_weights(*state_.best_model_checkpoint);
  }
  TrainOutput output;
  output.global_step = state_.global_step;
  const int64_t steps_done = state_.global_step - run.start_step;
  const double world_loss = comm().all_reduce_sum(run.total_loss, "averaging the training loss over ranks") /
                            static_cast<double>(comm().world_size());
  output.training_loss = steps_done > 0 ? world_loss / static_cast<double>(steps_done) : 0.0;
  const int64_t total_batch =
      args_.per_device_train_batch_size * run.accumulation * gradient_sync_->world_size();
  const double num_samples = args_.max_steps > 0
                                 ? static_cast<double>(run.max_steps * total_batch)
                                 : static_cast<double>(train_dataset_->size()) * args_.num_train_epochs;
  output.metrics["train_runtime"] = runtime;
  output.metrics["train_samples_per_second"] = runtime > 0 ? num_samples / runtime : 0.0;
  output.metrics["train_steps_per_second"] = runtime > 0 ? static_cast<double>(run.max_steps) / runtime : 0.0;
  output.metrics["total_flos"] = state_.total_flos;
  output.metrics["train_loss"] = output.training_loss;
  log(output.metrics);
  output.metrics["epoch"] = state_.epoch;
  callbacks_.on_train_end(args_, state_, control_);
  if (progress_) progress_->finish();
  on_main_process("saving the final model to " + run_dir_, [&] {
    save_model(run_dir_);
    state_.save(run_dir_ + "/trainer_state.json");
    // The best checkpoint is kept by rotation; the others beyond save_total_limit go.
    if (args_.save_total_limit)
      rotate_checkpoints(run_dir_, *args_.save_total_limit, state_.best_model_checkpoint);
  });
  // save_on_each_node: the first process of every other node writes its own copy (its disk is its own).
  if (!is_main_process() && args_.should_save(gradient_sync_->rank(), plan_->process.env.local_rank))
    save_model(run_dir_);
  return output;
}

void Trainer::maybe_log_save_evaluate(Run& run) {
  if (control_.should_log && state_.global_step > run.last_logged_step) {
    LogEntry entry;
    // HF logs the mean over ranks: each rank saw other examples.
    const double loss = comm().all_reduce_sum(run.loss_since_log, "averaging the logged loss over ranks") /
                        static_cast<double>(comm().world_size());
    entry["loss"] = loss / static_cast<double>(state_.global_step - run.last_logged_step);
    entry["grad_norm"] = run.grad_norm;
    entry["learning_rate"] = scheduler_->lr();
    run.loss_since_log = 0;
    run.last_logged_step = state_.global_step;
    log(entry);
  }
  bool new_best = false;
  if (control_.should_evaluate && eval_dataset_) {
    const std::map<std::string, double> metrics = evaluate_while_training();
    new_best = update_best_metric(metrics);
    step_schedule_on_metrics(metrics);
    model_->module().train();
  }
  if (args_.save_strategy == "best" && new_best) control_.should_save = true;
  const std::string checkpoint = (fs::path(run_dir_) / checkpoint_dir_name(state_.global_step)).string();
  // HF asks twice for the last step's save with save_strategy=epoch (at max_steps and at the epoch's end):
  // one checkpoint per step is enough.
  if (control_.should_save && last_saved_step_ == state_.global_step) {
    control_.should_save = false;
    if (new_best) state_.best_model_checkpoint = checkpoint;
  }
  if (control_.should_save) {
    if (new_best) state_.best_model_checkpoint = checkpoint;
    save_checkpoint(run.trial);
    last_saved_step_ = state_.global_step;
    callbacks_.on_save(args_, state_, control_);
  }
}

// Whether the evaluation's metric_for_best_model beats the best so far (then it becomes the best).
bool Trainer::update_best_metric(const std::map<std::string, double>& metrics) {
  if (!args_.resolved_metric_for_best_model()) return false;
  const std::string key = args_.best_metric_key();
  auto it = metrics.find(key);
  if (it == metrics.end()) {
    std::string available;
    for (const auto& [name, value] : metrics) available += (available.empty() ? "" : ", ") + name;
    BERTH_FAIL("metric_for_best_model '", *args_.resolved_metric_for_best_model(),
               "' is not among the evaluation's ", "metrics (looked for '", key, "'; found ", available,
               "). Fix: pick one of those");
  }
  const bool greater = args_.metric_greater_is_better();
  if (state_.best_metric && !(greater ? it->second > *state_.best_metric : it->second < *state_.best_metric))
    return false;
  state_.best_metric = it->second;
  state_.best_global_step = state_.global_step;
  return true;
}

}  // namespace berth::train
