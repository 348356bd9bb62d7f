// Trainer callbacks as in HF transformers: TrainerControl, TrainerCallback, CallbackHandler,
// DefaultFlowCallback, EarlyStoppingCallback.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "berth/train/trainer_state.h"
#include "berth/train/training_arguments.h"

namespace berth::train {

// What the Trainer should do next; callbacks set the flags, the Trainer acts on them and the handler clears
// them at HF's points (see CallbackHandler).
struct TrainerControl {
  bool should_training_stop = false;
  bool should_epoch_stop = false;
  bool should_save = false;
  bool should_evaluate = false;
  bool should_log = false;
};

using Metrics = std::map<std::string, double>;

// Hooks into the training loop; each does nothing unless overridden. The order of calls in one run:
// on_init_end, on_train_begin, then per epoch on_epoch_begin, per optimizer step on_step_begin,
// (on_substep_end per accumulated micro-batch but the last), on_pre_optimizer_step, on_optimizer_step,
// on_step_end, then on_log / on_evaluate / on_save as the control asks, on_epoch_end, and finally
// on_train_end.
class TrainerCallback {
 public:
  virtual ~TrainerCallback() = default;
  virtual void on_init_end(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  virtual void on_train_begin(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  virtual void on_train_end(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  virtual void on_epoch_begin(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  virtual void on_epoch_end(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  virtual void on_step_begin(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  virtual void on_substep_end(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  virtual void on_pre_optimizer_step(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  virtual void on_optimizer_step(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  virtual void on_step_end(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  // `logs`: the entry just appended to state.log_history.
  virtual void on_log(const TrainingArguments&, TrainerState&, TrainerControl&, const LogEntry& logs) {}
  // `metrics`: the evaluation's results ("eval_loss", "eval_accuracy", ...), before state.best_metric is
  // updated from them (as in HF, so EarlyStoppingCallback compares against the previous best).
  virtual void on_evaluate(const TrainingArguments&, TrainerState&, TrainerControl&, const Metrics& metrics) {
  }
  virtual void on_predict(const TrainingArguments&, TrainerState&, TrainerControl&, const Metrics& metrics) {}
  virtual void on_save(const TrainingArguments&, TrainerState&, TrainerControl&) {}
  // A name for logs and for state.stateful_callbacks.
  virtual std::string name() const { return "TrainerCallback"; }
};

// Calls every callback in order and returns the control, resetting flags where HF's CallbackHandler does:
// on_train_begin clears should_training_stop, on_epoch_begin should_epoch_stop, on_step_begin should_log,
// should_evaluate and should_save; on_log, on_evaluate and on_save clear their own flag after the calls.
class CallbackHandler {
 public:
  CallbackHandler() = default;
  explicit CallbackHandler(std::vector<std::shared_ptr<TrainerCallback>> callbacks);

  void add_callback(std::shared_ptr<TrainerCallback> callback);
  // Removes and returns the first callback whose name() is `name` (nullptr when none).
  std::shared_ptr<TrainerCallback> pop_callback(const std::string& name);
  const std::vector<std::shared_ptr<TrainerCallback>>& callbacks() const { return callbacks_; }

  TrainerControl& on_init_end(const TrainingArguments&, TrainerState&, TrainerControl&);
  TrainerControl& on_train_begin(const TrainingArguments&, TrainerState&, TrainerControl&);
  TrainerControl& on_train_end(const TrainingArguments&, TrainerState&, TrainerControl&);
  TrainerControl& on_epoch_begin(const TrainingArguments&, TrainerState&, TrainerControl&);
  TrainerControl& on_epoch_end(const TrainingArguments&, TrainerState&, TrainerControl&);
  TrainerControl& on_step_begin(const TrainingArguments&, TrainerState&, TrainerControl&);
  TrainerControl& on_substep_end(const TrainingArguments&, TrainerState&, TrainerControl&);
  TrainerControl& on_pre_optimizer_step(const TrainingArguments&, TrainerState&, TrainerControl&);
  TrainerControl& on_optimizer_step(const TrainingArguments&, TrainerState&, TrainerControl&);
  TrainerControl& on_step_end(const TrainingArguments&, TrainerState&, TrainerControl&);
  TrainerControl& on_log(const TrainingArguments&, TrainerState&, TrainerControl&, const LogEntry& logs);
  TrainerControl& on_evaluate(const TrainingArguments&, TrainerState&, TrainerControl&,
                              const Metrics& metrics);
  TrainerControl& on_predict(const TrainingArguments&, TrainerState&, TrainerControl&,
                             const Metrics& metrics);
  TrainerControl& on_save(const TrainingArguments&, TrainerState&, TrainerControl&);

 private:
  std::vector<std::shared_ptr<TrainerCallback>> callbacks_;
};

// HF's DefaultFlowCallback: decides when to log, evaluate, save and stop. It reads the resolved step counts
// from state.logging_steps / eval_steps / save_steps and state.max_steps (the Trainer sets them at train
// begin, e.g. with args.resolved_logging_steps(max_steps)).
//   on_step_end: should_log at step 1 with logging_first_step, and every logging_steps with
//     logging_strategy=steps; should_evaluate every eval_steps with eval_strategy=steps; should_save every
//     save_steps with save_strategy=steps; at global_step >= max_steps should_training_stop, and should_save
//     unless save_strategy is no or best.
//   on_epoch_end: should_log / should_evaluate / should_save for the *_strategy that is epoch.
// save_strategy=best saves are the Trainer's call (when an evaluation sets a new best metric).
class DefaultFlowCallback : public TrainerCallback {
 public:
  void on_step_end(const TrainingArguments& args, TrainerState& state, TrainerControl& control) override;
  void on_epoch_end(const TrainingArguments& args, TrainerState& state, TrainerControl& control) override;
  std::string name() const override { return "DefaultFlowCallback"; }
};

// HF's EarlyStoppingCallback: stops training after `patience` evaluations in a row that do not improve on
// state.best_metric by more than `threshold` (in the direction of args.metric_greater_is_better()).
// on_train_begin throws berth::Error without a metric for the best model or with eval_strategy=no (HF asserts
// both); on_evaluate throws when the metric is missing from the results (HF warns and gives up silently; in
// berth that is a misspelt metric_for_best_model, better told at once).
class EarlyStoppingCallback : public TrainerCallback {
 public:
  explicit EarlyStoppingCallback(int patience = 1, double threshold = 0.0);

  void on_train_begin(const TrainingArguments& args, TrainerState& state, TrainerControl& control) override;
  void on_evaluate(const TrainingArguments& args, TrainerState& state, TrainerControl& control,
                   const Metrics& metrics) override;
  std::string name() const override { return "EarlyStoppingCallback"; }

  int patience() const { return patience_; }
  double threshold() const { return threshold_; }
  // Evaluations in a row without improvement so far (HF's early_stopping_patience_counter).
  int patience_counter() const { return counter_; }
  // HF's stateful-callback record {"args": {...}, "attributes": {...}} as JSON text, and back, so a resumed
  // run continues the count (the Trainer keeps it in state.stateful_callbacks_json).
  std::string state_json() const;
  void restore_state_json(const std::string& text);

 private:
  int patience_;
  double threshold_;
  int counter_ = 0;
};

}  // namespace berth::train
