// Tests for LrScheduler: HF transformers' schedules through torch's LambdaLR (goldens from
// tests/goldens/optim_goldens.py, which runs transformers.get_scheduler), DeepSpeed's warmup
// schedules (tests/goldens/deepspeed_lr_goldens.py runs DeepSpeed's), names, state JSON round trips
// and mismatches.
#include "berth/optim/lr_scheduler.h"

#include "optim/optim_test_support.h"

#include <gtest/gtest.h>

namespace {

using berth::optim::LrScheduler;
using berth::optim::SchedulerOptions;
using berth::optim::SchedulerType;

SchedulerOptions options_of(const nlohmann::json& c) {
  SchedulerOptions options;
  options.type = berth::optim::parse_scheduler_type(c.at("type").get<std::string>());
  options.warmup_steps = c.at("warmup_steps");
  options.total_steps = c.at("total_steps");
  options.num_cycles = c.at("num_cycles");
  options.lr_end = c.at("lr_end");
  options.power = c.at("power");
  return options;
}

TEST(LrScheduler, MatchesHfSchedulesThroughLambdaLR) {
  const nlohmann::json golden = berth::testing::optim_golden("schedulers.json");
  ASSERT_EQ(golden.size(), 8u);
  for (const auto& c : golden) {
    LrScheduler scheduler(c.at("base_lr").get<double>(), options_of(c));
    const std::vector<double> lrs = c.at("lrs").get<std::vector<double>>();
    ASSERT_GT(lrs.size(), 30u);
    for (std::size_t step = 0; step < lrs.size(); ++step) {
      // The same double arithmetic as Python's: equal up to the last bit or two of pow and cos.
      EXPECT_NEAR(scheduler.lr_at(static_cast<int64_t>(step)), lrs[step],
                  1e-12 * c.at("base_lr").get<double>())
          << c.at("type") << " step " << step;
      EXPECT_EQ(scheduler.last_step(), static_cast<int64_t>(step));
      EXPECT_EQ(scheduler.lr(), scheduler.lr_at(static_cast<int64_t>(step)));
      scheduler.step();
    }
  }
}

TEST(LrScheduler, NamesRoundTripAndUnknownNamesListTheKnownOnes) {
  for (const char* name :
       {"linear", "cosine", "constant", "constant_with_warmup", "polynomial", "cosine_with_restarts",
        "inverse_sqrt", "reduce_lr_on_plateau", "cosine_with_min_lr", "warmup_stable_decay"})
    EXPECT_EQ(berth::optim::to_string(berth::optim::parse_scheduler_type(name)), name);
  berth::testing::expect_contains(
      berth::testing::error_text([] { berth::optim::parse_scheduler_type("cosine_with_hard_restarts"); }),
      {"unknown lr scheduler type 'cosine_with_hard_restarts'",
       "linear, cosine, constant, constant_with_warmup, polynomial, cosine_with_restarts, inverse_sqrt, "
       "reduce_lr_on_plateau, cosine_with_min_lr, warmup_stable_decay",
       "Fix:"});
}

SchedulerOptions cosine_options() {
  SchedulerOptions options;
  options.type = SchedulerType::Cosine;
  options.warmup_steps = 5;
  options.total_steps = 30;
  return options;
}

TEST(LrScheduler, StateJsonRoundTrip) {
  LrScheduler saved(5e-4, cosine_options());
  for (int i = 0; i < 7; ++i) saved.step();
  LrScheduler restored(5e-4, cosine_options());
  restored.load_state_json(saved.state_json());
  EXPECT_EQ(restored.last_step(), 7);
  EXPECT_EQ(restored.lr(), saved.lr());
  EXPECT_EQ(restored.state_json(), saved.state_json());
  const nlohmann::json state = nlohmann::json::parse(saved.state_json());
  EXPECT_EQ(state.at("type"), "cosine");
  EXPECT_EQ(state.at("last_step"), 7);
  EXPECT_EQ(state.at("base_lr").get<double>(), 5e-4);
}

TEST(LrScheduler, MismatchedStateNamesTheField) {
  LrScheduler saved(5e-4, cosine_options());
  SchedulerOptions other = cosine_options();
  other.warmup_steps = 3;
  LrScheduler different_warmup(5e-4, other);
  berth::testing::expect_contains(
      berth::testing::error_text([&] { different_warmup.load_state_json(saved.state_json()); }),
      {"warmup_steps is 5 in the saved state but 3 in this scheduler", "Fix:"});
  other = cosine_options();
  other.type = SchedulerType::Linear;
  LrScheduler linear(5e-4, other);
  berth::testing::expect_contains(
      berth::testing::error_text([&] { linear.load_state_json(saved.state_json()); }),
      {"type is \"cosine\" in the saved state but \"linear\" in this scheduler"});
  LrScheduler other_lr(1e-3, cosine_options());
  berth::testing::expect_contains(
      berth::testing::error_text([&] { other_lr.load_state_json(saved.state_json()); }),
      {"base_lr is 0.0005 in the saved state but 0.001 in this scheduler"});
  berth::testing::expect_contains(berth::testing::error_text([&] { other_lr.load_state_json("{not json"); }),
                                  {"invalid JSON", "Fix:"});
  EXPECT_EQ(other_lr.last_step(), 0);  // unchanged by the failed loads
}

TEST(LrScheduler, PolynomialNeedsLrEndBelowTheLearningRate) {
  SchedulerOptions options;
  options.type = SchedulerType::Polynomial;
  options.lr_end = 1e-3;
  berth::testing::expect_contains(berth::testing::error_text([&] { LrScheduler(1e-4, options); }),
                                  {"lr_end (0.001) must be smaller than initial lr (0.0001)", "Fix:"});
}

// DeepSpeed's schedules as its engine drives them (one scheduler.step() after each optimizer step). The
// cases, with DeepSpeed's constructor arguments and the lrs it set, come from
// tests/goldens/deepspeed_lr_goldens.py, which runs deepspeed.runtime.lr_schedules itself.
SchedulerOptions deepspeed_options(SchedulerType type, int64_t warmup, int64_t total,
                                   const char* warmup_type) {
  SchedulerOptions options;
  options.type = type;
  options.warmup_steps = warmup;
  options.total_steps = total;
  options.warmup_type = warmup_type;
  return options;
}

// berth's options for a golden case: DeepSpeed's keyword arguments, by lr_schedules.py's names.
SchedulerOptions deepspeed_options_of(const nlohmann::json& c) {
  const nlohmann::json& kwargs = c.at("kwargs");
  const SchedulerType type = berth::optim::parse_scheduler_type(c.at("type").get<std::string>());
  const std::string warmup_type = kwargs.at("warmup_type").get<std::string>();
  SchedulerOptions options =
      deepspeed_options(type, kwargs.at("warmup_num_steps").get<int64_t>(),
                        kwargs.value("total_num_steps", int64_t{0}), warmup_type.c_str());
  if (options.type == SchedulerType::WarmupCosineLR) {
    options.warmup_min_ratio = kwargs.at("warmup_min_ratio").get<double>();
    options.cos_min_ratio = kwargs.at("cos_min_ratio").get<double>();
  } else {
    options.warmup_min_lr = kwargs.at("warmup_min_lr").get<double>();
    // null: DeepSpeed takes the optimizer's lr, as berth does for a negative warmup_max_lr
    const nlohmann::json& max_lr = kwargs.at("warmup_max_lr");
    if (!max_lr.is_null()) options.warmup_max_lr = max_lr.get<double>();
  }
  return options;
}

TEST(LrScheduler, MatchesDeepSpeedsWarmupSchedules) {
  const nlohmann::json golden = berth::testing::optim_golden("deepspeed_schedulers.json");
  ASSERT_TRUE(golden.contains("cases"));
  ASSERT_GE(golden.at("cases").size(), 6u);
  std::size_t refused = 0;
  for (const auto& c : golden.at("cases")) {
    SCOPED_TRACE(c.at("type").get<std::string>() + " " + c.at("kwargs").dump());
    const double base_lr = c.at("base_lr").get<double>();
    const SchedulerOptions options = deepspeed_options_of(c);
    if (c.contains("error")) {
      // DeepSpeed refuses these arguments (a ValueError): so does berth, quoting it.
      ++refused;
      berth::testing::expect_contains(
          berth::testing::error_text([&] { LrScheduler scheduler(base_lr, options); }),
          {c.at("error").get<std::string>(), "Fix:"});
      continue;
    }
    LrScheduler scheduler(base_lr, options);
    const std::vector<double> lrs = c.at("lrs").get<std::vector<double>>();
    ASSERT_EQ(lrs.size(), c.at("steps").get<std::size_t>());
    for (std::size_t step = 0; step < lrs.size(); ++step) {
      EXPECT_NEAR(scheduler.lr(), lrs[step], 1e-12 * base_lr) << "step " << step;
      scheduler.step();
    }
  }
  EXPECT_LT(refused, golden.at("cases").size());  // most cases run
}

TEST(LrScheduler, DeepSpeedScheduleFacts) {
  // WarmupLR holds warmup_max_lr after warmup; the first two steps both use warmup_min_lr (log warmup).
  SchedulerOptions o = deepspeed_options(SchedulerType::WarmupLR, 100, 0, "log");
  o.warmup_min_lr = 1e-6;
  LrScheduler warmup(2e-5, o);
  EXPECT_EQ(warmup.lr_at(0), 1e-6);
  EXPECT_EQ(warmup.lr_at(1), 1e-6);
  EXPECT_DOUBLE_EQ(warmup.lr_at(101), 2e-5);
  EXPECT_DOUBLE_EQ(warmup.lr_at(5000), 2e-5);
  // WarmupDecayLR reaches 0 at total_num_steps + 1 and stays there.
  LrScheduler decay(1e-3, deepspeed_options(SchedulerType::WarmupDecayLR, 10, 50, "linear"));
  EXPECT_EQ(decay.lr_at(51), 0.0);
  EXPECT_EQ(decay.lr_at(80), 0.0);
  // WarmupCosineLR starts from 0 (what its constructor sets), ends at cos_min_ratio x lr and stays there.
  LrScheduler cosine(1e-3, deepspeed_options(SchedulerType::WarmupCosineLR, 10, 50, "linear"));
  EXPECT_EQ(cosine.lr_at(0), 0.0);
  EXPECT_NEAR(cosine.lr_at(50), 1e-3 * 1e-4, 1e-15);
  EXPECT_NEAR(cosine.lr_at(60), 1e-3 * 1e-4, 1e-15);
  // No steps left after warmup: cos_min_ratio x lr from then on.
  LrScheduler no_decay(1e-3, deepspeed_options(SchedulerType::WarmupCosineLR, 10, 10, "log"));
  EXPECT_NEAR(no_decay.lr_at(11), 1e-3 * 1e-4, 1e-15);
}

TEST(LrScheduler, DeepSpeedNamesAndErrors) {
  for (const char* name : {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR"}) {
    EXPECT_EQ(berth::optim::to_string(berth::optim::parse_scheduler_type(name)), name);
    EXPECT_TRUE(berth::optim::is_deepspeed_scheduler(berth::optim::parse_scheduler_type(name)));
  }
  EXPECT_FALSE(berth::optim::is_deepspeed_scheduler(SchedulerType::Linear));
  berth::testing::expect_contains(
      berth::testing::error_text(
          [] { LrScheduler(1e-3, deepspeed_options(SchedulerType::WarmupLR, 10, 0, "exp")); }),
      {"warmup_type must be \"log\" or \"linear\", found \"exp\""});
  berth::testing::expect_contains(
      berth::testing::error_text(
          [] { LrScheduler(1e-3, deepspeed_options(SchedulerType::WarmupLR, 0, 0, "log")); }),
      {"WarmupLR: warmup_steps (DeepSpeed's warmup_num_steps) must be at least 1", "--warmup_steps", "Fix:"});
}

TEST(LrScheduler, DeepSpeedStateJsonRoundTripsAndChecksItsParameters) {
  SchedulerOptions o = deepspeed_options(SchedulerType::WarmupCosineLR, 8, 40, "log");
  o.warmup_min_ratio = 0.1;
  LrScheduler saved(1e-3, o);
  for (int i = 0; i < 7; ++i) saved.step();
  const auto state = nlohmann::json::parse(saved.state_json());
  EXPECT_EQ(state.at("type"), "WarmupCosineLR");
  EXPECT_EQ(state.at("warmup_type"), "log");
  EXPECT_EQ(state.at("warmup_min_ratio"), 0.1);
  LrScheduler restored(1e-3, o);
  restored.load_state_json(saved.state_json());
  EXPECT_EQ(restored.last_step(), 7);
  EXPECT_EQ(restored.lr(), saved.lr());
  SchedulerOptions other = o;
  other.cos_min_ratio = 0.5;
  LrScheduler different(1e-3, other);
  berth::testing::expect_contains(
      berth::testing::error_text([&] { different.load_state_json(saved.state_json()); }),
      {"cos_min_ratio", "Fix:"});
  other = o;
  other.warmup_type = "linear";
  LrScheduler linear(1e-3, other);
  berth::testing::expect_contains(
      berth::testing::error_text([&] { linear.load_state_json(saved.state_json()); }),
      {"warmup_type is \"log\" in the saved state but \"linear\""});
}

}  // namespace
