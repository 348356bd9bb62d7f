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

// DeepSpeed's schedules as its engine drives them (one scheduler.step() after each optimizer step); the
// expected lrs come from tests/goldens/deepspeed_lr_goldens.py, which restates lr_schedules.py in Python.
struct DeepSpeedCase {
  double base_lr;
  SchedulerOptions options;
};

SchedulerOptions deepspeed_options(SchedulerType type, int64_t warmup, int64_t total,
                                   const char* warmup_type) {
  SchedulerOptions options;
  options.type = type;
  options.warmup_steps = warmup;
  options.total_steps = total;
  options.warmup_type = warmup_type;
  return options;
}

std::vector<DeepSpeedCase> deepspeed_cases() {
  std::vector<DeepSpeedCase> cases;
  SchedulerOptions o = deepspeed_options(SchedulerType::WarmupLR, 10, 0, "log");
  o.warmup_min_lr = 1e-5;
  o.warmup_max_lr = 1e-3;
  cases.push_back({1e-3, o});
  o = deepspeed_options(SchedulerType::WarmupLR, 10, 0, "linear");  // warmup_max_lr unset: the base lr
  cases.push_back({5e-5, o});
  o = deepspeed_options(SchedulerType::WarmupDecayLR, 5, 30, "linear");
  o.warmup_max_lr = 2e-5;
  cases.push_back({2e-5, o});
  o = deepspeed_options(SchedulerType::WarmupDecayLR, 1, 12, "log");  // DeepSpeed warms up at least 2 steps
  o.warmup_min_lr = 1e-6;
  o.warmup_max_lr = 1e-4;
  cases.push_back({1e-4, o});
  o = deepspeed_options(SchedulerType::WarmupCosineLR, 8, 40, "log");
  o.warmup_min_ratio = 0.1;
  o.cos_min_ratio = 1e-4;
  cases.push_back({1e-3, o});
  o = deepspeed_options(SchedulerType::WarmupCosineLR, 0, 20, "linear");
  o.cos_min_ratio = 0.01;
  cases.push_back({3e-4, o});
  return cases;
}

const std::vector<std::vector<double>> kDeepSpeedLrs = {
    // WarmupLR
    {1.0000000000000001e-05,
     1.0000000000000001e-05,
     0.00030801969570734138,
     0.00048235004217246576,
     0.00060603939141468273,
     0.00070198030429265851,
     0.00078036973787980711,
     0.00084664705961411417,
     0.00090405908712202392,
     0.00095470008434493149,
     0.0009999999999999998,
     0.001,
     0.001,
     0.001,
     0.001,
     0.001,
     0.001,
     0.001,
     0.001,
     0.001},
    // WarmupLR
    {0, 0, 5.0000000000000004e-06, 1.0000000000000001e-05, 1.5e-05, 2.0000000000000002e-05,
     2.5000000000000001e-05, 3.0000000000000001e-05, 3.4999999999999997e-05, 4.0000000000000003e-05,
     4.5000000000000003e-05, 5.0000000000000002e-05, 5.0000000000000002e-05, 5.0000000000000002e-05,
     5.0000000000000002e-05},
    // WarmupDecayLR
    {0,
     0,
     4.0000000000000007e-06,
     8.0000000000000013e-06,
     1.2e-05,
     1.6000000000000003e-05,
     2.0000000000000002e-05,
     1.9200000000000003e-05,
     1.8400000000000003e-05,
     1.7600000000000001e-05,
     1.6800000000000002e-05,
     1.6000000000000003e-05,
     1.5200000000000002e-05,
     1.4400000000000001e-05,
     1.3600000000000002e-05,
     1.2800000000000001e-05,
     1.2e-05,
     1.1200000000000001e-05,
     1.04e-05,
     9.6000000000000013e-06,
     8.8000000000000004e-06,
     8.0000000000000013e-06,
     7.2000000000000005e-06,
     6.4000000000000006e-06,
     5.6000000000000006e-06,
     4.8000000000000006e-06,
     4.0000000000000007e-06,
     3.2000000000000003e-06,
     2.4000000000000003e-06,
     1.6000000000000001e-06,
     8.0000000000000007e-07,
     0,
     0,
     0,
     0},
    // WarmupDecayLR
    {9.9999999999999995e-07, 9.9999999999999995e-07, 0.0001, 0.0001, 9.0100000000000008e-05,
     8.0200000000000011e-05, 7.0300000000000001e-05, 6.0399999999999998e-05, 5.0500000000000001e-05,
     4.0600000000000004e-05, 3.0700000000000001e-05, 2.0800000000000004e-05, 1.0900000000000002e-05,
     9.9999999999999995e-07, 9.9999999999999995e-07},
    // WarmupCosineLR
    {0,
     0.0001,
     0.00040000000000000002,
     0.00057548875021634692,
     0.0007000000000000001,
     0.00079657842846620863,
     0.00087548875021634684,
     0.00094220647661728124,
     0.001,
     0.00099759260409976484,
     0.00099039360093759504,
     0.0009784723208493178,
     0.00096194357227901784,
     0.0009409665361109601,
     0.00091574323267065748,
     0.00088651657615870035,
     0.00085356803525421445,
     0.00081721492241761454,
     0.00077780733799815013,
     0.00073572479857615767,
     0.00069137258201092664,
     0.00064517782439336849,
     0.00059758540649196333,
     0.00054905366930776403,
     0.00050005000000000004,
     0.00045104633069223616,
     0.00040251459350803669,
     0.00035492217560663164,
     0.00030872741798907338,
     0.00026437520142384246,
     0.00022229266200185,
     0.00018288507758238548,
     0.0001465319647457856,
     0.00011358342384129965,
     8.4356767329342458e-05,
     5.9133463889039952e-05,
     3.81564277209822e-05,
     2.1627679150682197e-05,
     9.7063990624049454e-06,
     2.507395900235201e-06,
     1.0000000000000001e-07,
     2.5073959002351455e-06,
     9.7063990624049454e-06,
     2.1627679150682142e-05,
     3.8156427720982146e-05},
    // WarmupCosineLR
    {0,
     0,
     0.00014999999999999999,
     0.00029774395132231286,
     0.00029104435418670738,
     0.00028010477246198911,
     0.0002652575998031682,
     0.00024695396003845103,
     0.00022574999999999996,
     0.0002022899912838618,
     0.00017728675438353917,
     0.0001515,
     0.00012571324561646085,
     0.00010071000871613823,
     7.7250000000000035e-05,
     5.60460399615489e-05,
     3.7742400196831781e-05,
     2.2895227538010884e-05,
     1.1955645813292614e-05,
     5.2560486776871076e-06},
};

TEST(LrScheduler, MatchesDeepSpeedsWarmupSchedules) {
  const auto cases = deepspeed_cases();
  ASSERT_EQ(cases.size(), kDeepSpeedLrs.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    LrScheduler scheduler(cases[i].base_lr, cases[i].options);
    for (std::size_t step = 0; step < kDeepSpeedLrs[i].size(); ++step) {
      EXPECT_NEAR(scheduler.lr(), kDeepSpeedLrs[i][step], 1e-12 * cases[i].base_lr)
          << berth::optim::to_string(cases[i].options.type) << " case " << i << " step " << step;
      scheduler.step();
    }
  }
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
  // WarmupCosineLR starts from 0 (what its constructor sets) and ends at cos_min_ratio x lr.
  LrScheduler cosine(1e-3, deepspeed_options(SchedulerType::WarmupCosineLR, 10, 50, "linear"));
  EXPECT_EQ(cosine.lr_at(0), 0.0);
  EXPECT_NEAR(cosine.lr_at(50), 1e-3 * 1e-4, 1e-15);
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
          [] { LrScheduler(1e-3, deepspeed_options(SchedulerType::WarmupCosineLR, 10, 10, "log")); }),
      {"WarmupCosineLR: total_num_steps (10) must be greater than warmup_num_steps (10"});
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
