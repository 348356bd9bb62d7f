// Trainer: the arguments that change what a step computes, when it evaluates or how a run starts, as HF's
// Trainer applies them: label_smoothing_factor (LabelSmoother in compute_loss), eval_on_start,
// reduce_lr_on_plateau's step on the evaluated metric, and auto_find_batch_size's retries.
#include <torch/torch.h>

#include <filesystem>

#include "berth/core/error.h"
#include "berth/optim/lr_scheduler.h"
#include "berth/tasks/task_recipe.h"
#include "berth/train/label_smoother.h"
#include "berth/train/progress_reporter.h"
#include "berth/train/trainer.h"

namespace berth::train {

namespace fs = std::filesystem;

int64_t next_executable_batch_size(int64_t batch_size) {
  return static_cast<int64_t>(static_cast<double>(batch_size) * 0.9);  // Python's int() truncates
}

TrainOutput Trainer::train(const std::optional<std::string>& resume_from_checkpoint, const Trial* trial) {
  std::optional<std::string> resume =
      resume_from_checkpoint ? resume_from_checkpoint : args_.resume_from_checkpoint;
  if (resume && resume->empty()) resume.reset();
  if (!args_.auto_find_batch_size) return train_once(resume, trial);
  // HF: "`auto_find_batch_size` isn't supported yet with DeepSpeed Zero-3".
  BERTH_CHECK(plan_->sharding.rfind("zero-3", 0) != 0, "auto_find_batch_size does not work with ZeRO-3 (",
              plan_->sharding, "), as in HF. Fix: drop --auto_find_batch_size, or use ZeRO stage 1 or 2");
  if (resume) {
    // HF's train(): a resumed run starts from the checkpoint's train_batch_size (the size its run found),
    // not the argument, so it neither repeats the retries nor changes the batch mid-run. Once, before the
    // retries (which may shrink it further); "latest" is resolved here so the run keeps that checkpoint.
    resume = resolve_resume(*resume);
    const int64_t saved = TrainerState::load(*resume + "/trainer_state.json").train_batch_size;
    if (saved > 0 && saved != args_.per_device_train_batch_size) {
      if (is_main_process())
        console() << "auto_find_batch_size: resuming with per_device_train_batch_size " << saved
                  << ", the size " << fs::path(*resume).filename().string()
                  << " trained with (the argument says " << args_.per_device_train_batch_size << ")\n";
      args_.per_device_train_batch_size = saved;
    }
  }
  for (;;) {
    try {
      return train_once(resume, trial);
    } catch (const c10::OutOfMemoryError& e) {
      const int64_t failed = args_.per_device_train_batch_size;
      const int64_t next = next_executable_batch_size(failed);
      BERTH_CHECK(next > 0, "auto_find_batch_size: out of memory at per_device_train_batch_size ", failed,
                  ", and a smaller one rounds to 0 (accelerate: \"No executable batch size found, reached "
                  "zero.\"). Fix: a smaller model or max_length, fp16/bf16, or ZeRO offload (--deepspeed)");
      if (is_main_process())
        console() << "warning: out of memory at per_device_train_batch_size " << failed
                  << "; auto_find_batch_size starts again with " << next << "\n";
      args_.per_device_train_batch_size = next;
      model_->module().zero_grad();  // the failed step's partial gradients
    }
  }
}

at::Tensor Trainer::task_loss(const at::Tensor& logits, const at::Tensor& labels,
                              const at::Tensor& model_loss) {
  // HF smooths only where the batch holds "labels" (question answering's positions are not).
  if (labels.defined() && loss_reads_logits())
    return label_smoothed_loss(logits, labels.to(logits.device()), args_.label_smoothing_factor,
                               tasks::task_recipe(model_->info().task).traits().shifts_labels);
  if (model_loss.defined()) return model_loss;
  return model_->loss(logits, labels);
}

bool Trainer::loss_reads_logits() const {
  return args_.label_smoothing_factor != 0 && label_smoothing_for(model_->info()) == LabelSmoothing::Applies;
}

// HF warns and trains without smoothing for multi-label classification; question answering's batches have
// no "labels", so HF never smooths them. Regression is refused (label_smoothing_for).
void Trainer::warn_about_label_smoothing() {
  if (args_.label_smoothing_factor == 0) return;
  const LabelSmoothing smoothing = label_smoothing_for(model_->info());
  if (smoothing == LabelSmoothing::Applies || !is_main_process()) return;
  console() << "warning: label_smoothing_factor " << args_.label_smoothing_factor << " is not applied: "
            << (smoothing == LabelSmoothing::Disabled
                    ? "label smoothing is not compatible with multi-label classification (as in HF)"
                    : "question answering's losses have start/end positions, not labels (as in HF)")
            << "\n";
}

// HF's eval_on_start: one evaluation after on_train_begin, logged at the run's first step (0 for a fresh
// run), and not stepping reduce_lr_on_plateau.
void Trainer::evaluate_on_start() {
  if (!args_.eval_on_start) return;
  BERTH_CHECK(eval_dataset_ != nullptr,
              "eval_on_start: evaluating before the first step needs an evaluation set, found none. Fix: "
              "pass an evaluation set (--validation_file or a validation split), or drop --eval_on_start");
  evaluate_while_training();
  model_->module().train();
}

std::map<std::string, double> Trainer::evaluate_while_training() {
  try {
    return evaluate();
  } catch (const c10::OutOfMemoryError& e) {
    if (!args_.auto_find_batch_size) throw;
    // Left to train()'s retry it would shrink the training batch to nothing (HF refuses the same way).
    BERTH_FAIL("evaluation ran out of memory (", e.what_without_backtrace(),
               "); auto_find_batch_size only adjusts the training batch size. Fix: reduce "
               "--per_device_eval_batch_size (now ",
               args_.per_device_eval_batch_size, ")");
  }
}

// HF's Trainer._evaluate: reduce_lr_on_plateau steps on metric_for_best_model ("loss" by default) after
// every evaluation during training.
void Trainer::step_schedule_on_metrics(const std::map<std::string, double>& metrics) {
  if (!scheduler_ || !scheduler_->steps_on_metric()) return;
  const std::string key = args_.best_metric_key();
  const auto it = metrics.find(key);
  if (it == metrics.end()) {
    std::string available;
    for (const auto& [name, value] : metrics) available += (available.empty() ? "" : ", ") + name;
    BERTH_FAIL("reduce_lr_on_plateau steps on metric_for_best_model '", key,
               "', which is not among the evaluation's metrics (", available,
               "). Fix: set --metric_for_best_model to one of those");
  }
  scheduler_->step_on_metric(it->second);
}

}  // namespace berth::train
