// The Trainer's step loop: epochs of micro-batches, the optimizer step with clipping and the non-finite
// guard, logging, saving and evaluating on HF's schedule, and the end of a run.
#include "berth/train/trainer.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "berth/core/error.h"
#include "berth/core/runtime.h"
#include "berth/data/data_loader.h"
#include "berth/device/device.h"
#include "berth/optim/lr_scheduler.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/place.h"
#include "berth/train/checkpoint_dir.h"
#include "berth/train/jsonl_log.h"
#include "berth/train/loss_scaler.h"
#include "berth/train/mixed_precision.h"
#include "berth/train/progress_reporter.h"
#include "berth/train/rng_state.h"
#include "train/trainer_internal.h"
#include "train/trainer_run.h"

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
    const LossOnlyForward loss_only(*model_, !loss_reads_logits());
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
