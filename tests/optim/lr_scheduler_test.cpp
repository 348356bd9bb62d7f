// Tests for LrScheduler: HF transformers' schedules through torch's LambdaLR (goldens from
// tests/goldens/optim_goldens.py), names, state JSON round trips and mismatches.
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
  for (const char* name : {"linear", "cosine", "constant", "constant_with_warmup", "polynomial"})
    EXPECT_EQ(berth::optim::to_string(berth::optim::parse_scheduler_type(name)), name);
  berth::testing::expect_contains(
      berth::testing::error_text([] { berth::optim::parse_scheduler_type("cosine_with_restarts"); }),
      {"unknown lr scheduler type 'cosine_with_restarts'",
       "linear, cosine, constant, constant_with_warmup, polynomial", "Fix:"});
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

}  // namespace
