// Tests for the callbacks: the handler's order and flag resets, HF's DefaultFlowCallback schedule, and
// EarlyStoppingCallback's patience.
#include "berth/train/callbacks.h"

#include <gtest/gtest.h>

#include <set>

#include "support/test_support.h"

namespace berth::train {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;

// Records which events reached it, in order.
class Recorder : public TrainerCallback {
 public:
  Recorder(std::string tag, std::vector<std::string>* events) : tag_(std::move(tag)), events_(events) {}
  void on_train_begin(const TrainingArguments&, TrainerState&, TrainerControl&) override {
    note("train_begin");
  }
  void on_step_begin(const TrainingArguments&, TrainerState&, TrainerControl&) override {
    note("step_begin");
  }
  void on_log(const TrainingArguments&, TrainerState&, TrainerControl& control,
              const LogEntry& logs) override {
    note("log " + std::to_string(logs.at("loss")).substr(0, 3) + (control.should_log ? " flagged" : ""));
  }
  std::string name() const override { return "Recorder:" + tag_; }

 private:
  void note(const std::string& event) { events_->push_back(tag_ + " " + event); }
  std::string tag_;
  std::vector<std::string>* events_;
};

TEST(CallbacksTest, HandlerCallsInOrderAndResetsFlagsWhereHfDoes) {
  std::vector<std::string> events;
  CallbackHandler handler(
      {std::make_shared<Recorder>("a", &events), std::make_shared<Recorder>("b", &events)});
  TrainingArguments args;
  TrainerState state;
  TrainerControl control;
  control.should_training_stop = true;
  handler.on_train_begin(args, state, control);
  EXPECT_FALSE(control.should_training_stop);
  control.should_log = control.should_evaluate = control.should_save = true;
  handler.on_step_begin(args, state, control);
  EXPECT_FALSE(control.should_log || control.should_evaluate || control.should_save);
  control.should_log = true;
  handler.on_log(args, state, control, {{"loss", 0.5}});
  EXPECT_FALSE(control.should_log);  // cleared after every callback saw it set
  control.should_evaluate = true;
  handler.on_evaluate(args, state, control, {{"eval_loss", 1.0}});
  EXPECT_FALSE(control.should_evaluate);
  control.should_save = true;
  handler.on_save(args, state, control);
  EXPECT_FALSE(control.should_save);
  control.should_epoch_stop = true;
  handler.on_epoch_begin(args, state, control);
  EXPECT_FALSE(control.should_epoch_stop);
  EXPECT_EQ(events, (std::vector<std::string>{"a train_begin", "b train_begin", "a step_begin",
                                              "b step_begin", "a log 0.5 flagged", "b log 0.5 flagged"}));
  EXPECT_EQ(handler.pop_callback("Recorder:a")->name(), "Recorder:a");
  EXPECT_EQ(handler.callbacks().size(), 1u);
  EXPECT_EQ(handler.pop_callback("nope"), nullptr);
}

// Runs HF's training loop skeleton (Trainer._inner_training_loop's callback calls) with DefaultFlowCallback
// and returns, per event kind, the steps at which the control asked for it ("e" marks an epoch end).
struct Flow {
  std::vector<int64_t> logs, evals, saves;
  int64_t stopped_at = -1;
};

Flow run_flow(const TrainingArguments& args, int64_t steps_per_epoch, int64_t epochs) {
  CallbackHandler handler({std::make_shared<DefaultFlowCallback>()});
  TrainerState state;
  state.max_steps = args.max_steps > 0 ? args.max_steps : steps_per_epoch * epochs;
  state.logging_steps = args.resolved_logging_steps(state.max_steps);
  state.eval_steps = args.resolved_eval_steps(state.max_steps);
  state.save_steps = args.resolved_save_steps(state.max_steps);
  TrainerControl control;
  Flow flow;
  const auto act = [&] {
    // HF's _maybe_log_save_evaluate: log, then evaluate, then save; the handler clears each flag.
    if (control.should_log) flow.logs.push_back(state.global_step), handler.on_log(args, state, control, {});
    if (control.should_evaluate)
      flow.evals.push_back(state.global_step), handler.on_evaluate(args, state, control, {});
    if (control.should_save) flow.saves.push_back(state.global_step), handler.on_save(args, state, control);
  };
  handler.on_train_begin(args, state, control);
  for (int64_t epoch = 0; epoch < epochs && !control.should_training_stop; ++epoch) {
    handler.on_epoch_begin(args, state, control);
    for (int64_t step = 0; step < steps_per_epoch; ++step) {
      handler.on_step_begin(args, state, control);
      ++state.global_step;
      state.epoch = epoch + (step + 1.0) / steps_per_epoch;
      handler.on_step_end(args, state, control);
      act();
      if (control.should_epoch_stop || control.should_training_stop) break;
    }
    handler.on_epoch_end(args, state, control);
    act();
  }
  if (control.should_training_stop) flow.stopped_at = state.global_step;
  handler.on_train_end(args, state, control);
  return flow;
}

TrainingArguments make_args(std::initializer_list<std::pair<const char*, const char*>> settings) {
  TrainingArguments args;
  for (const auto& [name, value] : settings) set_training_argument(args, name, value);
  args.validate();
  return args;
}

using Steps = std::vector<int64_t>;

TEST(CallbacksTest, DefaultFlowStepsStrategies) {
  const Flow flow = run_flow(make_args({{"max_steps", "10"},
                                        {"logging_steps", "3"},
                                        {"eval_strategy", "steps"},
                                        {"eval_steps", "4"},
                                        {"save_steps", "5"}}),
                             /*steps_per_epoch=*/4, /*epochs=*/5);
  EXPECT_EQ(flow.logs, (Steps{3, 6, 9}));
  EXPECT_EQ(flow.evals, (Steps{4, 8}));
  EXPECT_EQ(flow.saves, (Steps{5, 10}));  // 10: the final save at max_steps
  EXPECT_EQ(flow.stopped_at, 10);
}

TEST(CallbacksTest, DefaultFlowEvalStepsDefaultToLoggingSteps) {
  const Flow flow = run_flow(make_args({{"max_steps", "6"},
                                        {"logging_steps", "2"},
                                        {"logging_first_step", "true"},
                                        {"eval_strategy", "steps"},
                                        {"save_strategy", "no"}}),
                             10, 1);
  EXPECT_EQ(flow.logs, (Steps{1, 2, 4, 6}));
  EXPECT_EQ(flow.evals, (Steps{2, 4, 6}));
  EXPECT_TRUE(flow.saves.empty());  // save_strategy=no: not even at the end
  EXPECT_EQ(flow.stopped_at, 6);
}

TEST(CallbacksTest, DefaultFlowEpochStrategies) {
  const Flow flow = run_flow(make_args({{"num_train_epochs", "3"},
                                        {"logging_strategy", "epoch"},
                                        {"eval_strategy", "epoch"},
                                        {"save_strategy", "epoch"}}),
                             4, 3);
  EXPECT_EQ(flow.logs, (Steps{4, 8, 12}));
  EXPECT_EQ(flow.evals, (Steps{4, 8, 12}));
  // Step 12 reaches max_steps (should_save at the step end) and then ends the epoch (should_save again): HF
  // asks twice for the same step, so the Trainer must treat a save of an already saved step as done.
  EXPECT_EQ(flow.saves, (Steps{4, 8, 12, 12}));
  EXPECT_EQ(flow.stopped_at, 12);
}

TEST(CallbacksTest, DefaultFlowRatiosAndBestStrategy) {
  // logging_steps 0.25 of 20 steps = 5; save_strategy=best never saves on its own (the Trainer saves a new
  // best).
  const Flow flow = run_flow(make_args({{"max_steps", "20"},
                                        {"logging_steps", "0.25"},
                                        {"eval_strategy", "steps"},
                                        {"eval_steps", "0.5"},
                                        {"save_strategy", "best"},
                                        {"metric_for_best_model", "accuracy"}}),
                             100, 1);
  EXPECT_EQ(flow.logs, (Steps{5, 10, 15, 20}));
  EXPECT_EQ(flow.evals, (Steps{10, 20}));
  EXPECT_TRUE(flow.saves.empty());
}

TEST(CallbacksTest, DefaultFlowNoLoggingStrategy) {
  const Flow flow =
      run_flow(make_args({{"max_steps", "4"}, {"logging_strategy", "no"}, {"logging_steps", "1"}}), 4, 1);
  EXPECT_TRUE(flow.logs.empty());
  EXPECT_EQ(flow.saves, (Steps{4}));
}

// An evaluation loop as the Trainer runs it: on_evaluate sees the old best, then the best is updated.
std::vector<int> patience_counts(EarlyStoppingCallback& callback, const TrainingArguments& args,
                                 const std::vector<double>& values, int64_t* stopped_after) {
  TrainerState state;
  TrainerControl control;
  CallbackHandler handler({std::shared_ptr<EarlyStoppingCallback>(&callback, [](auto*) {})});
  handler.on_train_begin(args, state, control);
  std::vector<int> counts;
  *stopped_after = -1;
  const std::string key = args.best_metric_key();
  for (size_t i = 0; i < values.size(); ++i) {
    handler.on_evaluate(args, state, control, {{key, values[i]}, {"eval_runtime", 1.0}});
    const bool greater = args.metric_greater_is_better();
    if (!state.best_metric || (greater ? values[i] > *state.best_metric : values[i] < *state.best_metric))
      state.best_metric = values[i];
    counts.push_back(callback.patience_counter());
    if (control.should_training_stop) {
      *stopped_after = static_cast<int64_t>(i) + 1;
      break;
    }
  }
  return counts;
}

TEST(CallbacksTest, EarlyStoppingCountsEvaluationsWithoutImprovement) {
  const TrainingArguments args =
      make_args({{"eval_strategy", "epoch"}, {"save_strategy", "epoch"}, {"load_best_model_at_end", "true"}});
  EarlyStoppingCallback callback(2);
  int64_t stopped = 0;
  // eval_loss: lower is better. 1.0 (first: best) 0.8 (better) 0.9 (worse) 0.7 (better) 0.7 (equal) 0.75
  // (worse)
  EXPECT_EQ(patience_counts(callback, args, {1.0, 0.8, 0.9, 0.7, 0.7, 0.75, 0.1}, &stopped),
            (std::vector<int>{0, 0, 1, 0, 1, 2}));
  EXPECT_EQ(stopped, 6);
}

TEST(CallbacksTest, EarlyStoppingThresholdAndDirection) {
  const TrainingArguments args =
      make_args({{"eval_strategy", "steps"}, {"metric_for_best_model", "accuracy"}});
  EarlyStoppingCallback callback(3, 0.05);
  int64_t stopped = 0;
  // accuracy: higher is better, but only by more than 0.05. 0.5, 0.54 (+0.04: no), 0.6 (+0.06 over 0.54's
  // best)
  EXPECT_EQ(patience_counts(callback, args, {0.5, 0.54, 0.6, 0.62, 0.3, 0.61}, &stopped),
            (std::vector<int>{0, 1, 0, 1, 2, 3}));
  EXPECT_EQ(stopped, 6);
  const std::string state = callback.state_json();
  EarlyStoppingCallback restored(3, 0.05);
  restored.restore_state_json(state);
  EXPECT_EQ(restored.patience_counter(), 3);
  expect_contains(state, {"\"early_stopping_patience\":3", "\"early_stopping_patience_counter\":3"});
}

TEST(CallbacksTest, EarlyStoppingErrorsAsHfAsserts) {
  TrainerState state;
  TrainerControl control;
  EarlyStoppingCallback callback;
  expect_contains(error_text([&] {
                    callback.on_train_begin(make_args({{"eval_strategy", "epoch"}}), state, control);
                  }),
                  {"EarlyStoppingCallback requires metric_for_best_model", "Fix:"});
  expect_contains(error_text([&] {
                    callback.on_train_begin(make_args({{"metric_for_best_model", "f1"}}), state, control);
                  }),
                  {"EarlyStoppingCallback requires eval_strategy steps or epoch", "found 'no'"});
  const TrainingArguments args = make_args({{"eval_strategy", "epoch"}, {"metric_for_best_model", "f1"}});
  expect_contains(error_text([&] {
                    callback.on_evaluate(args, state, control, {{"eval_loss", 1.0}});
                  }),
                  {"'eval_f1'", "did not report it", "eval_loss"});
  expect_contains(error_text([] { EarlyStoppingCallback(0); }), {"patience >= 1", "found 0"});
  expect_contains(error_text([] { EarlyStoppingCallback(1, -0.1); }), {"threshold >= 0"});
  expect_contains(error_text([&] { callback.restore_state_json("{}"); }),
                  {"early_stopping_patience_counter"});
}

}  // namespace
}  // namespace berth::train
