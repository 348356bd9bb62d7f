// Tests for TrainerState: HF's trainer_state.json read, round-tripped, unknown keys kept, type errors named.
#include "berth/train/trainer_state.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace berth::train {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;

std::string fixture_path() {
  return berth::testing::source_dir() + "/tests/train/fixtures/hf_trainer_state.json";
}

std::string trainer_state_read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(TrainerStateTest, ReadsHfsTrainerStateJson) {
  const TrainerState state = TrainerState::load(fixture_path());
  EXPECT_EQ(state.global_step, 100);
  EXPECT_EQ(state.max_steps, 266);
  EXPECT_DOUBLE_EQ(state.epoch, 1.5037593984962405);
  EXPECT_EQ(state.logging_steps, 10);
  EXPECT_EQ(state.eval_steps, 50);
  EXPECT_EQ(state.save_steps, 100);
  EXPECT_EQ(state.num_train_epochs, 4);
  EXPECT_EQ(state.train_batch_size, 16);
  EXPECT_EQ(state.total_flos, 52631588044800.0);
  EXPECT_EQ(state.best_metric, 0.9512195121951219);
  EXPECT_EQ(state.best_global_step, 100);
  EXPECT_EQ(state.best_model_checkpoint, "out/spam-bert/checkpoint-100");
  EXPECT_FALSE(state.trial_name.has_value());
  ASSERT_EQ(state.log_history.size(), 4u);
  EXPECT_EQ(state.log_history[0].at("loss"), 0.6822);
  EXPECT_EQ(state.log_history[0].at("step"), 10);
  EXPECT_EQ(state.log_history[1].at("eval_f1"), 0.9302325581395349);
  EXPECT_EQ(state.log_history[3].at("train_runtime"), 41.2);
  const auto callbacks = nlohmann::json::parse(state.stateful_callbacks_json);
  EXPECT_EQ(callbacks["EarlyStoppingCallback"]["args"]["early_stopping_patience"], 3);
}

TEST(TrainerStateTest, HfFileRoundTripsToTheSameJson) {
  const std::string text = trainer_state_read_text(fixture_path());
  const TrainerState state = TrainerState::from_json_text(text);
  // Same keys and values as HF wrote (number spelling aside: compare parsed JSON).
  EXPECT_EQ(nlohmann::json::parse(state.to_json_text()), nlohmann::json::parse(text));
  EXPECT_EQ(TrainerState::from_json_text(state.to_json_text()).to_json_text(), state.to_json_text());
}

TEST(TrainerStateTest, DefaultStateWritesEveryHfKey) {
  const auto json = nlohmann::json::parse(TrainerState().to_json_text());
  for (const char* key : {"best_global_step",
                          "best_metric",
                          "best_model_checkpoint",
                          "epoch",
                          "eval_steps",
                          "global_step",
                          "is_hyper_param_search",
                          "is_local_process_zero",
                          "is_world_process_zero",
                          "log_history",
                          "logging_steps",
                          "max_steps",
                          "num_input_tokens_seen",
                          "num_train_epochs",
                          "save_steps",
                          "stateful_callbacks",
                          "total_flos",
                          "train_batch_size",
                          "trial_name",
                          "trial_params"})
    EXPECT_TRUE(json.contains(key)) << key;
  EXPECT_EQ(json.size(), 20u);
  EXPECT_TRUE(json["best_metric"].is_null());
  EXPECT_EQ(json["stateful_callbacks"], nlohmann::json::object());
}

TEST(TrainerStateTest, BuiltStateRoundTripsThroughAFile) {
  TrainerState state;
  state.epoch = 0.5;
  state.global_step = 12;
  state.max_steps = 24;
  state.log_history.push_back({{"loss", 0.5}, {"learning_rate", 5e-5}, {"grad_norm", 1.25}, {"step", 12}});
  state.log_history.push_back({{"eval_loss", 0.4}, {"eval_accuracy", 0.75}, {"step", 12}});
  state.best_metric = 0.4;
  state.best_model_checkpoint = "out/checkpoint-12";
  state.trial_name = "trial-3";
  berth::testing::TempDir dir;
  state.save(dir.file("trainer_state.json"));
  const TrainerState back = TrainerState::load(dir.file("trainer_state.json"));
  EXPECT_EQ(back.to_json_text(), state.to_json_text());
  EXPECT_EQ(back.log_history, state.log_history);
  EXPECT_EQ(back.trial_name, "trial-3");
  // "step" is written as an integer, as HF does.
  EXPECT_TRUE(nlohmann::json::parse(state.to_json_text())["log_history"][0]["step"].is_number_integer());
}

TEST(TrainerStateTest, UnknownKeysAreKeptAndNonNumericLogValuesSkipped) {
  const TrainerState state = TrainerState::from_json_text(
      R"({"global_step": 3, "future_field": {"a": [1, 2]}, "log_history": [{"loss": 1.5, "note": "text", "step": 3}]})",
      "new.json");
  EXPECT_EQ(state.global_step, 3);
  EXPECT_EQ(state.log_history.at(0), (LogEntry{{"loss", 1.5}, {"step", 3}}));
  const auto written = nlohmann::json::parse(state.to_json_text());
  EXPECT_EQ(written["future_field"], nlohmann::json::parse(R"({"a": [1, 2]})"));
}

TEST(TrainerStateTest, TypeErrorsNameKeyAndSource) {
  expect_contains(error_text([] {
                    TrainerState::from_json_text(R"({"global_step": "ten"})", "ckpt/trainer_state.json");
                  }),
                  {"ckpt/trainer_state.json", "\"global_step\" must be a whole number", "\"ten\""});
  expect_contains(error_text([] { TrainerState::from_json_text(R"({"log_history": {}})", "s.json"); }),
                  {"\"log_history\" must be a list of objects"});
  expect_contains(error_text([] { TrainerState::from_json_text("not json", "s.json"); }),
                  {"s.json", "not valid JSON"});
  expect_contains(
      error_text([] { TrainerState::load("/nonexistent/trainer_state.json"); }),
      {"the trainer state /nonexistent/trainer_state.json: expected a file, found nothing at that path",
       "Fix: pass a checkpoint folder"});
}

// Found by fuzz/checkpoint_state_fuzzer: 1e400 escaped as nlohmann's out_of_range (the CLI exited 1).
TEST(TrainerStateTest, NumberBeyondADoubleIsInvalidJson) {
  expect_contains(error_text([] { TrainerState::from_json_text(R"({"total_flos": 1e400})", "s.json"); }),
                  {"s.json", "number overflow parsing '1e400'"});
}

}  // namespace
}  // namespace berth::train
