// Trainer callbacks: the handler's dispatch and HF's DefaultFlowCallback and EarlyStoppingCallback logic.
#include "berth/train/callbacks.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "berth/core/error.h"

namespace berth::train {

CallbackHandler::CallbackHandler(std::vector<std::shared_ptr<TrainerCallback>> callbacks) {
  for (auto& callback : callbacks) add_callback(std::move(callback));
}

void CallbackHandler::add_callback(std::shared_ptr<TrainerCallback> callback) {
  BERTH_BUG(callback != nullptr, "CallbackHandler::add_callback(nullptr)");
  callbacks_.push_back(std::move(callback));
}

std::shared_ptr<TrainerCallback> CallbackHandler::pop_callback(const std::string& name) {
  for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
    if ((*it)->name() == name) {
      auto callback = *it;
      callbacks_.erase(it);
      return callback;
    }
  }
  return nullptr;
}

#define BERTH_DISPATCH(event)                                                                \
  TrainerControl& CallbackHandler::event(const TrainingArguments& args, TrainerState& state, \
                                         TrainerControl& control) {                          \
    for (auto& callback : callbacks_) callback->event(args, state, control);                 \
    return control;                                                                          \
  }

BERTH_DISPATCH(on_init_end)
BERTH_DISPATCH(on_train_end)
BERTH_DISPATCH(on_epoch_end)
BERTH_DISPATCH(on_substep_end)
BERTH_DISPATCH(on_pre_optimizer_step)
BERTH_DISPATCH(on_optimizer_step)
BERTH_DISPATCH(on_step_end)
#undef BERTH_DISPATCH

TrainerControl& CallbackHandler::on_train_begin(const TrainingArguments& args, TrainerState& state,
                                                TrainerControl& control) {
  control.should_training_stop = false;
  for (auto& callback : callbacks_) callback->on_train_begin(args, state, control);
  return control;
}

TrainerControl& CallbackHandler::on_epoch_begin(const TrainingArguments& args, TrainerState& state,
                                                TrainerControl& control) {
  control.should_epoch_stop = false;
  for (auto& callback : callbacks_) callback->on_epoch_begin(args, state, control);
  return control;
}

TrainerControl& CallbackHandler::on_step_begin(const TrainingArguments& args, TrainerState& state,
                                               TrainerControl& control) {
  control.should_log = false;
  control.should_evaluate = false;
  control.should_save = false;
  for (auto& callback : callbacks_) callback->on_step_begin(args, state, control);
  return control;
}

TrainerControl& CallbackHandler::on_log(const TrainingArguments& args, TrainerState& state,
                                        TrainerControl& control, const LogEntry& logs) {
  for (auto& callback : callbacks_) callback->on_log(args, state, control, logs);
  control.should_log = false;
  return control;
}

TrainerControl& CallbackHandler::on_evaluate(const TrainingArguments& args, TrainerState& state,
                                             TrainerControl& control, const Metrics& metrics) {
  for (auto& callback : callbacks_) callback->on_evaluate(args, state, control, metrics);
  control.should_evaluate = false;
  return control;
}

TrainerControl& CallbackHandler::on_predict(const TrainingArguments& args, TrainerState& state,
                                            TrainerControl& control, const Metrics& metrics) {
  for (auto& callback : callbacks_) callback->on_predict(args, state, control, metrics);
  return control;
}

TrainerControl& CallbackHandler::on_save(const TrainingArguments& args, TrainerState& state,
                                         TrainerControl& control) {
  for (auto& callback : callbacks_) callback->on_save(args, state, control);
  control.should_save = false;
  return control;
}

void DefaultFlowCallback::on_step_end(const TrainingArguments& args, TrainerState& state,
                                      TrainerControl& control) {
  if (state.global_step == 1 && args.logging_first_step) control.should_log = true;
  if (args.logging_strategy == "steps" && state.logging_steps > 0 &&
      state.global_step % state.logging_steps == 0)
    control.should_log = true;
  if (args.eval_strategy == "steps" && state.eval_steps > 0 && state.global_step % state.eval_steps == 0)
    control.should_evaluate = true;
  if (args.save_strategy == "steps" && state.save_steps > 0 && state.global_step % state.save_steps == 0)
    control.should_save = true;
  if (state.global_step >= state.max_steps) {
    control.should_training_stop = true;
    // HF saves the final model whenever some save strategy is on (best saves only on a new best).
    if (args.save_strategy != "no" && args.save_strategy != "best") control.should_save = true;
  }
}

void DefaultFlowCallback::on_epoch_end(const TrainingArguments& args, TrainerState& state,
                                       TrainerControl& control) {
  if (args.logging_strategy == "epoch") control.should_log = true;
  if (args.eval_strategy == "epoch") control.should_evaluate = true;
  if (args.save_strategy == "epoch") control.should_save = true;
}

EarlyStoppingCallback::EarlyStoppingCallback(int patience, double threshold)
    : patience_(patience), threshold_(threshold) {
  BERTH_CHECK(patience >= 1,
              "EarlyStoppingCallback needs patience >= 1 (evaluations without improvement), found ", patience,
              ". Fix: e.g. EarlyStoppingCallback(3)");
  BERTH_CHECK(threshold >= 0 && std::isfinite(threshold),
              "EarlyStoppingCallback needs threshold >= 0 (the least improvement that counts), found ",
              threshold, ". Fix: e.g. EarlyStoppingCallback(3, 0.001)");
}

void EarlyStoppingCallback::on_train_begin(const TrainingArguments& args, TrainerState&, TrainerControl&) {
  BERTH_CHECK(
      args.resolved_metric_for_best_model().has_value(),
      "EarlyStoppingCallback requires metric_for_best_model to be defined, found it unset (and "
      "load_best_model_at_end false). Fix: e.g. metric_for_best_model eval_loss, or load_best_model_at_end "
      "true");
  BERTH_CHECK(args.eval_strategy != "no",
              "EarlyStoppingCallback requires eval_strategy steps or epoch, found 'no': without evaluations "
              "there is nothing to stop on. Fix: e.g. eval_strategy epoch");
}

void EarlyStoppingCallback::on_evaluate(const TrainingArguments& args, TrainerState& state,
                                        TrainerControl& control, const Metrics& metrics) {
  const std::string key = args.best_metric_key();
  const auto found = metrics.find(key);
  if (found == metrics.end()) {
    std::string names;
    for (const auto& [name, value] : metrics) names += (names.empty() ? "" : ", ") + name;
    BERTH_FAIL("EarlyStoppingCallback: metric_for_best_model is '", key,
               "' but the evaluation did not report it (it reported: ", names.empty() ? "nothing" : names,
               "). Fix: set metric_for_best_model to one of those");
  }
  const double value = found->second;
  const bool greater = args.metric_greater_is_better();
  const bool better =
      state.best_metric && (greater ? value > *state.best_metric : value < *state.best_metric);
  if (!state.best_metric || (better && std::fabs(value - *state.best_metric) > threshold_)) {
    counter_ = 0;
  } else {
    ++counter_;
  }
  if (counter_ >= patience_) control.should_training_stop = true;
}

std::string EarlyStoppingCallback::state_json() const {
  nlohmann::json record;
  record["args"] = {{"early_stopping_patience", patience_}, {"early_stopping_threshold", threshold_}};
  record["attributes"] = {{"early_stopping_patience_counter", counter_}};
  return record.dump();
}

void EarlyStoppingCallback::restore_state_json(const std::string& text) {
  nlohmann::json record;
  try {
    record = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    BERTH_FAIL("EarlyStoppingCallback state is not valid JSON (", e.what(),
               "). Fix: resume from a checkpoint whose trainer_state.json is intact");
  }
  const nlohmann::json::json_pointer where("/attributes/early_stopping_patience_counter");
  const nlohmann::json counter =
      record.is_object() && record.contains(where) ? record.at(where) : nlohmann::json();
  BERTH_CHECK(
      counter.is_number_integer(),
      "EarlyStoppingCallback state needs attributes.early_stopping_patience_counter as a whole number, "
      "found ",
      counter.dump(), ". Fix: resume from a checkpoint whose trainer_state.json is intact");
  counter_ = counter.get<int>();
}

}  // namespace berth::train
