// Tests for hyperparameter search: parsing spaces, grid order and limits, seeded random draws in bounds.
#include "berth/train/hyperparameter_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "berth/train/training_arguments.h"
#include "support/test_support.h"

namespace berth::train {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;

const char* kSpace = R"({
  "learning_rate": {"type": "log_uniform", "low": 1e-5, "high": 1e-3},
  "per_device_train_batch_size": [16, 32],
  "num_train_epochs": {"type": "int", "low": 2, "high": 4},
  "warmup_ratio": {"type": "uniform", "low": 0.0, "high": 0.2},
  "lr_scheduler_type": {"type": "choice", "values": ["linear", "cosine"]}
})";

TEST(HyperparameterSearchTest, ParsesEveryKind) {
  const SearchSpace space = SearchSpace::from_json_text(kSpace);
  ASSERT_EQ(space.dims.size(), 5u);
  EXPECT_EQ(space.dims[0].name, "learning_rate");
  EXPECT_EQ(space.dims[0].kind, SearchDimension::LogUniform);
  EXPECT_EQ(space.dims[1].name, "lr_scheduler_type");
  EXPECT_EQ(space.dims[1].choices, (std::vector<std::string>{"linear", "cosine"}));
  EXPECT_EQ(space.dims[2].kind, SearchDimension::IntRange);
  EXPECT_EQ(space.dims[3].choices, (std::vector<std::string>{"16", "32"}));
  EXPECT_EQ(space.dims[4].kind, SearchDimension::Uniform);
  EXPECT_EQ(space.dims[4].high, 0.2);
}

TEST(HyperparameterSearchTest, GridIsTheCartesianProductLastFastest) {
  const SearchSpace space = SearchSpace::from_json_text(
      R"({"per_device_train_batch_size": [16, 32], "num_train_epochs": {"type": "int", "low": 2, "high": 4}})");
  const auto trials = sample_trials(space, SearchMethod::Grid, 0, 0);
  ASSERT_EQ(trials.size(), 6u);
  std::vector<std::string> seen;
  for (const auto& t : trials)
    seen.push_back(t.at("num_train_epochs") + "/" + t.at("per_device_train_batch_size"));
  EXPECT_EQ(seen, (std::vector<std::string>{"2/16", "2/32", "3/16", "3/32", "4/16", "4/32"}));
  EXPECT_EQ(sample_trials(space, SearchMethod::Grid, 4, 0).size(), 4u);
  EXPECT_EQ(sample_trials(space, SearchMethod::Grid, 100, 0).size(), 6u);
  // Every trial is ready for set_training_argument.
  for (const auto& trial : trials) {
    TrainingArguments args;
    for (const auto& [name, value] : trial) set_training_argument(args, name, value);
    EXPECT_NO_THROW(args.validate());
  }
}

TEST(HyperparameterSearchTest, GridRejectsContinuousDimensions) {
  expect_contains(
      error_text([] { sample_trials(SearchSpace::from_json_text(kSpace), SearchMethod::Grid, 0, 0); }),
      {"grid search needs a finite set of values", "'learning_rate' is log_uniform", "random search"});
}

TEST(HyperparameterSearchTest, RandomIsSeededAndInBounds) {
  const SearchSpace space = SearchSpace::from_json_text(kSpace);
  const auto a = sample_trials(space, SearchMethod::Random, 200, 7);
  EXPECT_EQ(a, sample_trials(space, SearchMethod::Random, 200, 7));
  EXPECT_NE(a, sample_trials(space, SearchMethod::Random, 200, 8));
  std::set<std::string> epochs, batch, schedulers;
  double low_lr = 1, high_lr = 0;
  int below_1e4 = 0;
  for (const auto& trial : a) {
    TrainingArguments args;
    for (const auto& [name, value] : trial) set_training_argument(args, name, value);
    EXPECT_NO_THROW(args.validate());
    EXPECT_GE(args.learning_rate, 1e-5);
    EXPECT_LT(args.learning_rate, 1e-3);
    low_lr = std::min(low_lr, args.learning_rate), high_lr = std::max(high_lr, args.learning_rate);
    below_1e4 += args.learning_rate < 1e-4;
    EXPECT_GE(args.warmup_ratio, 0.0);
    EXPECT_LT(args.warmup_ratio, 0.2);
    epochs.insert(trial.at("num_train_epochs"));
    batch.insert(trial.at("per_device_train_batch_size"));
    schedulers.insert(trial.at("lr_scheduler_type"));
  }
  EXPECT_EQ(epochs, (std::set<std::string>{"2", "3", "4"}));
  EXPECT_EQ(batch, (std::set<std::string>{"16", "32"}));
  EXPECT_EQ(schedulers, (std::set<std::string>{"cosine", "linear"}));
  // Log-uniform: half the draws fall below the geometric midpoint 1e-4 (200 draws: well inside 60..140).
  EXPECT_GT(below_1e4, 60);
  EXPECT_LT(below_1e4, 140);
  expect_contains(error_text([&] { sample_trials(space, SearchMethod::Random, 0, 1); }), {"n_trials >= 1"});
}

TEST(HyperparameterSearchTest, SpaceErrorsNameTheDimension) {
  expect_contains(
      error_text([] { SearchSpace::from_json_text(R"({"learning_rat": [1e-5]})", "space.json"); }),
      {"space.json", "'learning_rat' is not a training argument", "did you mean 'learning_rate'?"});
  expect_contains(
      error_text([] {
        SearchSpace::from_json_text(R"({"learning_rate": {"type": "log_uniform", "low": 0, "high": 1}})");
      }),
      {"\"learning_rate\" is log_uniform", "low must be > 0"});
  expect_contains(
      error_text([] {
        SearchSpace::from_json_text(R"({"warmup_ratio": {"type": "uniform", "low": 0.5, "high": 0.1}})");
      }),
      {"\"warmup_ratio\" needs low <= high", "low 0.5", "high 0.1"});
  expect_contains(
      error_text([] {
        SearchSpace::from_json_text(R"({"num_train_epochs": {"type": "int", "low": 1.5, "high": 3}})");
      }),
      {"\"num_train_epochs\" is int", "whole numbers"});
  expect_contains(
      error_text([] { SearchSpace::from_json_text(R"({"seed": {"type": "normal", "low": 0, "high": 1}})"); }),
      {"type 'normal'", "choice, uniform, log_uniform, int"});
  expect_contains(error_text([] { SearchSpace::from_json_text(R"({"seed": {"low": 0}})"); }),
                  {"\"seed\"", "\"type\""});
  expect_contains(error_text([] { SearchSpace::from_json_text(R"({"seed": []})"); }),
                  {"\"seed\" has no choices"});
  expect_contains(error_text([] { SearchSpace::from_json_text("{}"); }), {"non-empty JSON object"});
}

TEST(HyperparameterSearchTest, MethodAndDirectionParsing) {
  EXPECT_EQ(parse_search_method("Grid"), SearchMethod::Grid);
  EXPECT_EQ(parse_search_method("random"), SearchMethod::Random);
  expect_contains(error_text([] { parse_search_method("bayes"); }), {"grid or random", "'bayes'"});
  EXPECT_EQ(parse_direction("maximize"), Direction::Maximize);
  EXPECT_EQ(parse_direction("MIN"), Direction::Minimize);
  expect_contains(error_text([] { parse_direction("up"); }), {"maximize or minimize", "'up'"});
}

}  // namespace
}  // namespace berth::train
