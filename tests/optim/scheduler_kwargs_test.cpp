// Tests for HF's lr_scheduler_type with lr_scheduler_kwargs: every lr of the newer schedules equals
// transformers.get_scheduler's (goldens from tests/goldens/hf_schedule_goldens.py), reduce_lr_on_plateau
// equals torch's ReduceLROnPlateau stepped on the same metrics, and wrong kwargs are refused by name.
#include "berth/optim/scheduler_kwargs.h"

#include "optim/optim_test_support.h"

#include <gtest/gtest.h>

namespace {

using berth::optim::LrScheduler;
using berth::optim::SchedulerOptions;
using berth::testing::error_text;
using berth::testing::expect_contains;

LrScheduler scheduler_kwargs_golden_scheduler(const nlohmann::json& c) {
  const double base_lr = c.at("base_lr").get<double>();
  const SchedulerOptions options =
      berth::optim::hf_scheduler_options(c.at("type").get<std::string>(), c.at("warmup_steps").get<int64_t>(),
                                         c.at("total_steps").get<int64_t>(), base_lr, c.at("kwargs").dump());
  return LrScheduler(base_lr, options);
}

TEST(SchedulerKwargs, EveryStepsLrEqualsHfGetScheduler) {
  const nlohmann::json golden = berth::testing::optim_golden("hf_schedules.json");
  ASSERT_GE(golden.size(), 20u);
  size_t lambda_cases = 0;
  for (const auto& c : golden) {
    if (c.contains("metrics")) continue;
    ++lambda_cases;
    LrScheduler scheduler = scheduler_kwargs_golden_scheduler(c);
    const std::vector<double> lrs = c.at("lrs").get<std::vector<double>>();
    ASSERT_GT(lrs.size(), 20u);
    for (size_t step = 0; step < lrs.size(); ++step) {
      // Python's double arithmetic: equal up to the last bits of cos, sqrt and pow.
      EXPECT_NEAR(scheduler.lr(), lrs[step], 1e-12 * c.at("base_lr").get<double>())
          << c.at("type") << " " << c.at("kwargs") << " step " << step;
      scheduler.step();
    }
  }
  EXPECT_GE(lambda_cases, 15u);
}

TEST(SchedulerKwargs, ReduceLrOnPlateauEqualsTorchsOnTheSameMetrics) {
  const nlohmann::json golden = berth::testing::optim_golden("hf_schedules.json");
  size_t plateau_cases = 0;
  for (const auto& c : golden) {
    if (!c.contains("metrics")) continue;
    ++plateau_cases;
    LrScheduler scheduler = scheduler_kwargs_golden_scheduler(c);
    ASSERT_TRUE(scheduler.steps_on_metric());
    const std::vector<double> metrics = c.at("metrics").get<std::vector<double>>();
    const std::vector<double> lrs = c.at("lrs").get<std::vector<double>>();
    for (size_t i = 0; i < metrics.size(); ++i) {
      scheduler.step();  // optimizer steps do not move it
      scheduler.step_on_metric(metrics[i]);
      EXPECT_NEAR(scheduler.lr(), lrs[i], 1e-15) << c.at("kwargs") << " evaluation " << i;
    }
  }
  EXPECT_GE(plateau_cases, 7u);
}

TEST(SchedulerKwargs, PlateauStateRoundTripsThroughJson) {
  const auto options = berth::optim::hf_scheduler_options("reduce_lr_on_plateau", 0, 100, 1e-3,
                                                          R"({"patience": 0, "factor": 0.5, "cooldown": 1})");
  LrScheduler a(1e-3, options);
  for (double metric : {1.0, 1.0, 0.9, 0.95}) a.step_on_metric(metric);
  LrScheduler b(1e-3, options);
  b.load_state_json(a.state_json());
  EXPECT_EQ(b.lr(), a.lr());
  EXPECT_LT(a.lr(), 1e-3);
  for (double metric : {0.95, 0.95, 0.8, 0.9}) {
    a.step_on_metric(metric);
    b.step_on_metric(metric);
    EXPECT_EQ(b.lr(), a.lr());
  }
  // Another patience is another schedule.
  LrScheduler other(1e-3,
                    berth::optim::hf_scheduler_options("reduce_lr_on_plateau", 0, 100, 1e-3,
                                                       R"({"patience": 3, "factor": 0.5, "cooldown": 1})"));
  expect_contains(error_text([&] { other.load_state_json(a.state_json()); }),
                  {"reduce_lr_on_plateau options are", "\"patience\":0", "\"patience\":3", "Fix:"});
}

TEST(SchedulerKwargs, UnknownKwargsAreRefusedByName) {
  expect_contains(
      error_text([] { berth::optim::hf_scheduler_options("cosine", 0, 10, 1e-3, R"({"cycles": 2})"); }),
      {"lr_scheduler_kwargs: cosine takes num_cycles, found cycles", "Fix: remove cycles"});
  expect_contains(
      error_text([] {
        berth::optim::hf_scheduler_options("reduce_lr_on_plateau", 0, 10, 1e-3,
                                           R"({"patience": 2, "verbos": 1})");
      }),
      {"reduce_lr_on_plateau takes cooldown, eps, factor, min_lr, mode, patience, threshold, threshold_mode",
       "found verbos"});
  expect_contains(
      error_text([] { berth::optim::hf_scheduler_options("linear", 0, 10, 1e-3, R"({"power": 2})"); }),
      {"linear takes no keyword arguments, found power", "Fix: remove power"});
  expect_contains(
      error_text([] { berth::optim::hf_scheduler_options("polynomial", 0, 10, 1e-3, R"({"power": "2"})"); }),
      {"lr_scheduler_kwargs for polynomial: \"power\" must be a number, found \"2\"", "Fix:"});
  expect_contains(error_text([] { berth::optim::hf_scheduler_options("cosine", 0, 10, 1e-3, "[1, 2]"); }),
                  {"lr_scheduler_kwargs: expected a JSON object, found [1,2]", "Fix:"});
  expect_contains(
      error_text([] { berth::optim::hf_scheduler_options("cosine", 0, 10, 1e-3, "{num_cycles: 2"); }),
      {"lr_scheduler_kwargs: expected a JSON object, found invalid JSON", "Fix:"});
}

TEST(SchedulerKwargs, HfsOwnRefusalsComeWithAFix) {
  expect_contains(error_text([] {
                    berth::optim::hf_scheduler_options("cosine_with_min_lr", 0, 10, 1e-3,
                                                       R"({"min_lr": 1e-5, "min_lr_rate": 0.1})");
                  }),
                  {"set min_lr or min_lr_rate, found both", "Fix: keep one"});
  const auto no_min = berth::optim::hf_scheduler_options("cosine_with_min_lr", 0, 10, 1e-3, "");
  expect_contains(error_text([&] { LrScheduler(1e-3, no_min); }),
                  {"cosine_with_min_lr needs min_lr or min_lr_rate, found neither", "Fix:"});
  expect_contains(
      error_text([] { berth::optim::hf_scheduler_options("warmup_stable_decay", 0, 10, 1e-3, "{}"); }),
      {"warmup_stable_decay: num_decay_steps is required", "Fix:"});
  const auto wsd = berth::optim::hf_scheduler_options("warmup_stable_decay", 0, 10, 1e-3,
                                                      R"({"num_decay_steps": 3, "decay_type": "exp"})");
  expect_contains(error_text([&] { LrScheduler(1e-3, wsd); }),
                  {"decay_type must be linear, cosine or 1-sqrt, found 'exp'", "Fix:"});
  const auto plateau =
      berth::optim::hf_scheduler_options("reduce_lr_on_plateau", 0, 10, 1e-3, R"({"factor": 1.5})");
  expect_contains(error_text([&] { LrScheduler(1e-3, plateau); }),
                  {"factor must be < 1", "found 1.5", "Fix:"});
  expect_contains(error_text([] { berth::optim::hf_scheduler_options("WarmupLR", 0, 10, 1e-3, ""); }),
                  {"one of DeepSpeed's schedules", "Fix:"});
}

TEST(SchedulerKwargs, DefaultsAreHfs) {
  EXPECT_EQ(berth::optim::hf_scheduler_options("cosine_with_restarts", 0, 10, 1e-3, "").num_cycles, 1.0);
  EXPECT_EQ(berth::optim::hf_scheduler_options("cosine", 0, 10, 1e-3, "null").num_cycles, 0.5);
  const auto min_lr =
      berth::optim::hf_scheduler_options("cosine_with_min_lr", 0, 10, 2e-3, R"({"min_lr": 1e-4})");
  EXPECT_DOUBLE_EQ(*min_lr.min_lr_rate, 0.05);  // HF: min_lr / the optimizer's lr
  const auto plateau = berth::optim::hf_scheduler_options("reduce_lr_on_plateau", 0, 10, 1e-3, "{}");
  EXPECT_EQ(plateau.plateau.patience, 10);
  EXPECT_EQ(plateau.plateau.factor, 0.1);
  EXPECT_EQ(plateau.plateau.mode, "min");
}

}  // namespace
