// LossScaler: DeepSpeed's update_scale step for step (tests/goldens/loss_scaler_goldens.py runs DeepSpeed's
// code), the min-scale stop, checkpoint state, and inf/nan injected into a real model's gradients.
#include "berth/train/loss_scaler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "berth/dist/local_gradient_sync.h"
#include "berth/optim/adamw.h"
#include "berth/optim/clip_grad.h"
#include "berth/optim/param_groups.h"
#include "support/test_support.h"

using berth::testing::error_text;
using berth::testing::expect_contains;

namespace berth::train {
namespace {

nlohmann::json golden_cases() {
  std::ifstream in(berth::testing::golden_dir() + "/train/loss_scaler.json");
  EXPECT_TRUE(in.good()) << "missing golden; build the berth_goldens target";
  return in.good() ? nlohmann::json::parse(in)["cases"] : nlohmann::json::array();
}

LossScaleOptions loss_scaler_options_of(const nlohmann::json& c) {
  LossScaleOptions options;
  options.loss_scale = 0;
  options.initial_scale_power = c["initial_scale_power"].get<int>();
  options.loss_scale_window = c["loss_scale_window"].get<int64_t>();
  options.hysteresis = c["hysteresis"].get<int>();
  options.consecutive_hysteresis = c["consecutive_hysteresis"].get<bool>();
  options.min_loss_scale = c["min_loss_scale"].get<double>();
  return options;
}

// Steps [from, to) of a golden case against `scaler`, field by field.
void expect_steps(LossScaler& scaler, const nlohmann::json& c, size_t from, size_t to) {
  const auto& steps = c["steps"];
  for (size_t i = from; i < to; ++i) {
    const auto& step = steps[i];
    SCOPED_TRACE(c["name"].get<std::string>() + " step " + std::to_string(i));
    ASSERT_EQ(scaler.scale(), step["scale"].get<double>());
    const LossScaleUpdate update = scaler.update(step["overflow"].get<bool>());
    EXPECT_EQ(update.skipped, step["overflow"].get<bool>());
    EXPECT_EQ(update.old_scale, step["scale"].get<double>());
    EXPECT_EQ(update.new_scale, step["new_scale"].get<double>());
    EXPECT_EQ(scaler.state().cur_hysteresis, step["hysteresis"].get<int>());
    EXPECT_EQ(scaler.state().cur_iter, step["cur_iter"].get<int64_t>());
    EXPECT_EQ(scaler.state().last_overflow_iter, step["last_overflow_iter"].get<int64_t>());
    EXPECT_EQ(update.log_line, step["log"].get<std::string>());
  }
}

TEST(LossScaler, MatchesDeepSpeedStepByStep) {
  const auto cases = golden_cases();
  ASSERT_EQ(cases.size(), 8u);
  int raised = 0;
  for (const auto& c : cases) {
    LossScaler scaler(loss_scaler_options_of(c));
    EXPECT_TRUE(scaler.dynamic());
    expect_steps(scaler, c, 0, c["steps"].size());
    if (!c["raised_at"].is_null()) {
      // DeepSpeed raised at this step: berth stops there too, with its own text.
      ++raised;
      const std::string text = error_text([&] { scaler.update(true); });
      expect_contains(text, {"already the minimum"});
    }
  }
  EXPECT_EQ(raised, 4);  // the three min-scale cases and the long hysteresis-3 run
}

TEST(LossScaler, DefaultsAreDeepSpeedsFp16Block) {
  LossScaler scaler(LossScaleOptions{});
  EXPECT_TRUE(scaler.dynamic());
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.state().cur_hysteresis, 2);
  EXPECT_EQ(scaler.state().last_overflow_iter, -1);
  // hysteresis 2: the first overflow only spends hysteresis, the second halves.
  EXPECT_EQ(scaler.update(true).log_line,
            "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis is 2. "
            "Reducing hysteresis to 1");
  const LossScaleUpdate second = scaler.update(true);
  EXPECT_TRUE(second.skipped);
  EXPECT_EQ(second.new_scale, 32768.0);
  EXPECT_EQ(second.log_line,
            "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768");
  // A good step neither skips nor logs; the 1001st after the overflow doubles (DeepSpeed 0.19's
  // stable_interval: 1000 clean steps after the first one).
  for (int i = 1; i <= 1000; ++i) {
    const LossScaleUpdate good = scaler.update(false);
    ASSERT_FALSE(good.skipped);
    ASSERT_EQ(good.new_scale, 32768.0) << i;
    ASSERT_TRUE(good.log_line.empty());
  }
  EXPECT_EQ(scaler.update(false).new_scale, 65536.0);
  LossScaler rank3(LossScaleOptions{}, 3);
  rank3.update(true);
  EXPECT_EQ(rank3.update(true).log_line.rfind("[deepspeed] OVERFLOW! Rank 3 Skipping step.", 0), 0u);
}

TEST(LossScaler, StopsAtMinScaleWithWhatWhyAndFix) {
  LossScaleOptions options;
  options.initial_scale_power = 2;
  options.hysteresis = 1;
  options.min_loss_scale = 1;
  LossScaler scaler(options);
  scaler.update(false);
  EXPECT_EQ(scaler.update(true).new_scale, 2.0);
  EXPECT_EQ(scaler.update(true).new_scale, 1.0);
  // At the minimum: DeepSpeed's "Exiting run", with berth's what, why and fix.
  const std::string text = error_text([&] { scaler.update(true); });
  expect_contains(text, {"optimizer step 4", "overflowed (inf or nan) at loss scale 1",
                         "already the minimum (min_loss_scale 1)", "the last 3 steps in a row overflowed",
                         "diverged", "learning rate is too high", "fp16's range", "--bf16",
                         "\"bf16\": {\"enabled\": true}", "lower --learning_rate", "check the data"});
}

TEST(LossScaler, StaticScaleSkipsOverflowsAndKeepsItsScale) {
  LossScaleOptions options;
  options.loss_scale = 128;
  LossScaler scaler(options);
  EXPECT_FALSE(scaler.dynamic());
  EXPECT_EQ(scaler.scale(), 128.0);
  for (int i = 0; i < 5; ++i) {
    const LossScaleUpdate update = scaler.update(true);  // never the min-scale stop: the scale is fixed
    EXPECT_TRUE(update.skipped);
    EXPECT_EQ(update.new_scale, 128.0);
    EXPECT_EQ(update.log_line,
              "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 128, static loss scale: not "
              "changed");
  }
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(scaler.update(false).new_scale, 128.0);
  EXPECT_EQ(scaler.state().cur_iter, 2005);
}

TEST(LossScaler, StateRoundTripContinuesTheSameSequence) {
  const auto cases = golden_cases();
  ASSERT_EQ(cases.size(), 8u);
  for (const auto& c : cases) {
    const size_t n = c["steps"].size(), half = n / 2;
    LossScaler first(loss_scaler_options_of(c));
    expect_steps(first, c, 0, half);
    const std::string saved = first.state_json();
    const auto json = nlohmann::json::parse(saved);
    EXPECT_EQ(json["cur_scale"].get<double>(), first.scale());
    EXPECT_EQ(json["cur_iter"].get<int64_t>(), static_cast<int64_t>(half));
    EXPECT_TRUE(json["dynamic"].get<bool>());
    LossScaler resumed(loss_scaler_options_of(c));
    EXPECT_TRUE(resumed.load_state_json(saved));
    expect_steps(resumed, c, half, n);
  }
}

TEST(LossScaler, LoadRejectsBrokenStateAndIgnoresTheOtherKind) {
  LossScaler dynamic(LossScaleOptions{});
  expect_contains(error_text([&] { dynamic.load_state_json("{not json", "checkpoint-7/loss_scaler.json"); }),
                  {"checkpoint-7/loss_scaler.json is not valid JSON"});
  expect_contains(error_text([&] { dynamic.load_state_json(R"({"dynamic": true, "cur_scale": 8})"); }),
                  {"lacks a field", "cur_iter"});
  expect_contains(
      error_text([&] {
        dynamic.load_state_json(
            R"({"dynamic":true,"cur_scale":-8,"cur_iter":3,"last_overflow_iter":1,"cur_hysteresis":1})");
      }),
      {"impossible state", "positive"});
  LossScaleOptions static_options;
  static_options.loss_scale = 256;
  LossScaler fixed(static_options);
  fixed.update(false);
  EXPECT_FALSE(dynamic.load_state_json(fixed.state_json()));  // a static checkpoint: the dynamic options win
  EXPECT_EQ(dynamic.scale(), 65536.0);
  EXPECT_EQ(dynamic.state().cur_iter, 0);
  // A resumed run with a smaller hysteresis: the saved one is cut to it.
  LossScaleOptions one;
  one.hysteresis = 1;
  LossScaler cut(one);
  EXPECT_TRUE(cut.load_state_json(
      R"({"dynamic":true,"cur_scale":1024,"cur_iter":9,"last_overflow_iter":4,"cur_hysteresis":2})"));
  EXPECT_EQ(cut.state().cur_hysteresis, 1);
  EXPECT_EQ(cut.scale(), 1024.0);
  EXPECT_EQ(cut.update(true).new_scale, 512.0);
}

TEST(LossScaler, RejectsOptionsWithTheFix) {
  auto with = [](auto change) {
    LossScaleOptions options;
    change(options);
    return error_text([&] { LossScaler scaler(options); });
  };
  expect_contains(with([](LossScaleOptions& o) { o.loss_scale = -1; }),
                  {"loss_scale must be 0 (dynamic loss scaling) or a positive static scale, found -1"});
  expect_contains(with([](LossScaleOptions& o) { o.loss_scale_window = 0; }),
                  {"loss_scale_window must be at least 1", "found 0"});
  expect_contains(with([](LossScaleOptions& o) { o.hysteresis = 0; }), {"hysteresis must be at least 1"});
  expect_contains(with([](LossScaleOptions& o) { o.initial_scale_power = 200; }),
                  {"initial_scale_power must be between 0 and 127", "found 200"});
  expect_contains(with([](LossScaleOptions& o) {
                    o.initial_scale_power = 4;
                    o.min_loss_scale = 32;
                  }),
                  {"min_loss_scale must be positive and at most the initial scale", "= 16", "found 32"});
}

TEST(LossScaler, HasInfOrNan) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(has_inf_or_nan({}));
  EXPECT_FALSE(has_inf_or_nan({at::Tensor(), torch::empty({0})}));
  EXPECT_FALSE(has_inf_or_nan({torch::ones({3}), torch::full({2, 2}, 3.0e38f)}));
  EXPECT_TRUE(has_inf_or_nan({torch::ones({3}), torch::tensor({1.0f, inf})}));
  EXPECT_TRUE(has_inf_or_nan({torch::tensor({-inf}), torch::ones({3})}));
  EXPECT_TRUE(has_inf_or_nan({at::Tensor(), torch::tensor({0.0f, nan, 1.0f})}));
  EXPECT_TRUE(has_inf_or_nan({torch::tensor({65504.0f}).to(torch::kHalf).mul(2)}));  // fp16 overflow
  EXPECT_FALSE(has_inf_or_nan({torch::ones({4}, torch::kBFloat16), torch::ones({2}, torch::kFloat64)}));
}

// The fp16 step as the Trainer runs it, on a real model: loss * scale, backward, unscale, global norm; an inf
// or nan injected into one gradient makes the norm non-finite, the step is skipped (parameters and Adam
// state untouched) and the scale halves; the next clean step trains with the unscaled gradients.
TEST(LossScaler, InjectedInfOrNanInRealGradientsSkipsTheStep) {
  for (const float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    torch::manual_seed(3);
    torch::nn::Linear model(torch::nn::LinearOptions(8, 4));
    const at::Tensor x = torch::randn({16, 8}), y = torch::randn({16, 4});
    std::vector<at::Tensor> params = model->parameters();
    optim::AdamW adam(optim::hf_param_groups(*model, 0.01), optim::AdamWOptions{1e-2});
    LossScaleOptions options;
    options.initial_scale_power = 10;
    options.hysteresis = 1;
    LossScaler scaler(options);

    auto backward_scaled = [&] {
      const at::Tensor loss = torch::mse_loss(model(x), y);
      (loss * scaler.scale()).backward();
      for (auto& p : params) p.grad().div_(scaler.scale());  // GradientSync's unscale
      return loss.item<double>();
    };
    // Step 1: inf/nan in the weight's gradient.
    backward_scaled();
    params[0].grad()[1][2] = bad;
    std::vector<at::Tensor> before;
    for (const auto& p : params) before.push_back(p.detach().clone());
    const double norm = optim::clip_grad_norm(params, 1.0);
    EXPECT_FALSE(std::isfinite(norm));
    EXPECT_TRUE(has_inf_or_nan({params[0].grad(), params[1].grad()}));
    const LossScaleUpdate skipped = scaler.update(!std::isfinite(norm));
    EXPECT_TRUE(skipped.skipped);
    EXPECT_EQ(skipped.old_scale, 1024.0);
    EXPECT_EQ(skipped.new_scale, 512.0);
    EXPECT_EQ(skipped.log_line,
              "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1024, reducing to 512");
    if (!skipped.skipped) adam.step();
    adam.zero_grad_to_none();
    for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i], before[i])) << i;
    EXPECT_TRUE(adam.state().empty());  // no Adam moments were touched

    // Step 2: clean. The unscaled gradients equal the plain loss's (scales are powers of two: exact).
    const double loss_before = backward_scaled();
    std::vector<at::Tensor> scaled_grads;
    for (const auto& p : params) scaled_grads.push_back(p.grad().clone());
    adam.zero_grad_to_none();
    torch::mse_loss(model(x), y).backward();
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(torch::allclose(scaled_grads[i], params[i].grad(), 1e-6, 1e-7)) << i;
    const double clean_norm = optim::clip_grad_norm(params, 1.0);
    EXPECT_TRUE(std::isfinite(clean_norm));
    const LossScaleUpdate good = scaler.update(!std::isfinite(clean_norm));
    EXPECT_FALSE(good.skipped);
    EXPECT_EQ(good.new_scale, 512.0);
    adam.step();
    adam.zero_grad_to_none();
    EXPECT_FALSE(torch::equal(params[0], before[0]));
    EXPECT_LT(torch::mse_loss(model(x), y).item<double>(), loss_before);
  }
}

// The same through the lead's GradientSync::step (one process): it unscales, finds the non-finite norm and
// skips; the scaler halves; the next step trains with the unscaled gradients.
TEST(LossScaler, LocalGradientSyncSkipsAnInjectedOverflow) {
  torch::manual_seed(4);
  torch::nn::Linear model(torch::nn::LinearOptions(6, 3));
  const at::Tensor x = torch::randn({10, 6}), y = torch::randn({10, 3});
  const std::vector<at::Tensor> params = model->parameters();
  dist::LocalGradientSync sync;
  sync.reducer().prepare(*model);
  sync.optimizer().create(
      *model, dist::OptimizerSpec{optim::hf_param_groups(*model, 0.0), optim::AdamWOptions{1e-2}});
  LossScaleOptions options;  // DeepSpeed's defaults: 2^16, hysteresis 2
  LossScaler scaler(options);
  std::vector<at::Tensor> before;
  for (const auto& p : params) before.push_back(p.detach().clone());
  auto scaled_step = [&](bool inject) {
    (torch::mse_loss(model(x), y) * scaler.scale()).backward();
    if (inject) params[1].grad()[0] = std::numeric_limits<float>::quiet_NaN();
    dist::StepOptions step;
    step.max_grad_norm = 1.0;
    step.loss_scale = scaler.scale();
    step.skip_on_overflow = true;
    const dist::StepResult result = sync.optimizer().step(params, step);
    return std::make_pair(result, scaler.update(result.overflow));
  };
  for (int overflow = 0; overflow < 2; ++overflow) {  // hysteresis 2: the scale halves at the second
    const auto [result, update] = scaled_step(true);
    EXPECT_TRUE(result.overflow);
    EXPECT_TRUE(update.skipped);
    EXPECT_EQ(update.new_scale, overflow == 0 ? 65536.0 : 32768.0);
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_TRUE(torch::equal(params[i], before[i])) << i;
      EXPECT_FALSE(params[i].grad().defined()) << i;  // dropped, not carried into the next step
    }
    EXPECT_TRUE(sync.replica_optimizer()->state().empty());
  }
  // The reference norm of the unscaled loss's gradients.
  torch::mse_loss(model(x), y).backward();
  const double reference = optim::clip_grad_norm(params, 0.0);
  dist::drop_gradients(params);
  const auto [result, update] = scaled_step(false);
  EXPECT_FALSE(result.overflow);
  EXPECT_FALSE(update.skipped);
  EXPECT_NEAR(result.grad_norm, reference, 1e-6 * reference);
  EXPECT_FALSE(torch::equal(params[0], before[0]));
  EXPECT_EQ(sync.replica_optimizer()->state().size(), 2u);
}

}  // namespace
}  // namespace berth::train
