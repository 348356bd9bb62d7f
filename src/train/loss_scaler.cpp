// LossScaler: DeepSpeed's static and dynamic loss scalers, the min-scale stop, the inf/nan check.
#include "berth/train/loss_scaler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "berth/core/error.h"

namespace berth::train {
namespace {

constexpr double kScaleFactor = 2.0;  // DeepSpeed's scale_factor: the engine never changes it

// DeepSpeed prints int(scale); fractional scales (a min_loss_scale below 1) keep their digits here instead of
// printing 0.
std::string scale_text(double scale) {
  if (scale == std::floor(scale) && std::fabs(scale) < 9.007199254740992e15)
    return std::to_string(static_cast<int64_t>(scale));
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", scale);
  return text;
}

}  // namespace

LossScaler::LossScaler(const LossScaleOptions& options, int64_t rank)
    : options_(options), dynamic_(options.loss_scale == 0), delayed_shift_(options.hysteresis), rank_(rank) {
  BERTH_CHECK(std::isfinite(options.loss_scale) && options.loss_scale >= 0,
              "fp16 loss_scale must be 0 (dynamic loss scaling) or a positive static scale, found ",
              options.loss_scale,
              ". Fix: set \"loss_scale\": 0 in the DeepSpeed config's fp16 block, or a scale "
              "such as 128");
  if (!dynamic_) {
    state_.cur_scale = options.loss_scale;
    return;
  }
  BERTH_CHECK(
      options.initial_scale_power >= 0 && options.initial_scale_power <= 127,
      "fp16 initial_scale_power must be between 0 and 127 (the first scale is 2^power and must fit in "
      "float32), found ",
      options.initial_scale_power, ". Fix: use DeepSpeed's default 16");
  BERTH_CHECK(options.loss_scale_window >= 1, "fp16 loss_scale_window must be at least 1 step, found ",
              options.loss_scale_window, ". Fix: use DeepSpeed's default 1000");
  BERTH_CHECK(options.hysteresis >= 1,
              "fp16 hysteresis must be at least 1 (1: halve the scale at the first overflow), found ",
              options.hysteresis, ". Fix: use DeepSpeed's default 2");
  const double initial = std::ldexp(1.0, options.initial_scale_power);
  BERTH_CHECK(std::isfinite(options.min_loss_scale) && options.min_loss_scale > 0 &&
                  options.min_loss_scale <= initial,
              "fp16 min_loss_scale must be positive and at most the initial scale 2^initial_scale_power = ",
              scale_text(initial), ", found ", options.min_loss_scale,
              ". Fix: use DeepSpeed's default min_loss_scale 1, or raise initial_scale_power");
  state_.cur_scale = initial;
  state_.cur_hysteresis = delayed_shift_;
}

LossScaleUpdate LossScaler::update(bool overflow) {
  LossScaleUpdate result;
  result.skipped = overflow;
  result.old_scale = state_.cur_scale;
  const std::string prefix = "[deepspeed] OVERFLOW! Rank " + std::to_string(rank_) + " Skipping step.";
  overflows_in_a_row_ = overflow ? overflows_in_a_row_ + 1 : 0;
  if (!dynamic_) {
    // DeepSpeed's static LossScaler: the step is skipped, the scale stays.
    if (overflow)
      result.log_line = prefix + " Attempted loss scale: " + scale_text(state_.cur_scale) +
                        ", static loss scale: not changed";
    ++state_.cur_iter;
    result.new_scale = state_.cur_scale;
    return result;
  }
  // DynamicLossScaler.update_scale, line for line.
  if (overflow) {
    if (delayed_shift_ == 1 || state_.cur_hysteresis == 1) {
      if (state_.cur_scale == options_.min_loss_scale) {
        BERTH_FAIL("fp16 training cannot go on: the gradients of optimizer step ", state_.cur_iter + 1,
                   " overflowed (inf or nan) at loss scale ", scale_text(state_.cur_scale),
                   ", which is already the minimum (min_loss_scale ", scale_text(options_.min_loss_scale),
                   "), so the scale cannot be lowered further; the last ", overflows_in_a_row_,
                   " steps in a row overflowed and were skipped. Gradients that are inf/nan at any scale "
                   "mean the run "
                   "diverged (the loss itself is inf/nan), the learning rate is too high, or activations "
                   "exceed fp16's "
                   "range (largest value 65504). Fix: train in bf16 (--bf16, or \"bf16\": {\"enabled\": "
                   "true} in the "
                   "DeepSpeed config: fp32's range, no loss scaling), lower --learning_rate (or warm up "
                   "longer, or set "
                   "--max_grad_norm), check the data for broken or extreme inputs, or resume from an earlier "
                   "checkpoint");
      }
      const double next_scale = std::max(state_.cur_scale / kScaleFactor, options_.min_loss_scale);
      result.log_line = prefix + " Attempted loss scale: " + scale_text(state_.cur_scale) + ", reducing to " +
                        scale_text(next_scale);
      state_.cur_scale = next_scale;
    } else {
      result.log_line = prefix + " Attempted loss scale: " + scale_text(state_.cur_scale) +
                        ", but hysteresis is " + std::to_string(state_.cur_hysteresis) +
                        ". Reducing hysteresis to " + std::to_string(state_.cur_hysteresis - 1);
      --state_.cur_hysteresis;
    }
    state_.last_overflow_iter = state_.cur_iter;
  } else {
    if (options_.consecutive_hysteresis) state_.cur_hysteresis = delayed_shift_;
    // DeepSpeed 0.19: the scale grows once loss_scale_window steps have passed without an overflow since the
    // step after the last one (stable_interval), i.e. at the (window + 1)-th clean step in a row.
    const int64_t stable_interval = (state_.cur_iter - state_.last_overflow_iter) - 1;
    if (stable_interval > 0 && stable_interval % options_.loss_scale_window == 0) {
      if (!options_.consecutive_hysteresis) state_.cur_hysteresis = delayed_shift_;
      state_.cur_scale *= kScaleFactor;
    }
  }
  ++state_.cur_iter;
  result.new_scale = state_.cur_scale;
  return result;
}

std::string LossScaler::state_json() const {
  nlohmann::json json = {{"dynamic", dynamic_},
                         {"cur_scale", state_.cur_scale},
                         {"cur_iter", state_.cur_iter},
                         {"last_overflow_iter", state_.last_overflow_iter},
                         {"cur_hysteresis", state_.cur_hysteresis}};
  return json.dump();
}

bool LossScaler::load_state_json(const std::string& text, const std::string& source) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    BERTH_FAIL(source, " is not valid JSON (", e.what(),
               "). Fix: restore the checkpoint's file or resume from "
               "another checkpoint");
  }
  LossScalerState loaded;
  bool dynamic = false;
  try {
    dynamic = json.at("dynamic").get<bool>();
    loaded.cur_scale = json.at("cur_scale").get<double>();
    loaded.cur_iter = json.at("cur_iter").get<int64_t>();
    loaded.last_overflow_iter = json.at("last_overflow_iter").get<int64_t>();
    loaded.cur_hysteresis = json.at("cur_hysteresis").get<int>();
  } catch (const nlohmann::json::exception& e) {
    BERTH_FAIL(
        source, " lacks a field or has one of the wrong type (", e.what(),
        "); expected dynamic, cur_scale, cur_iter, last_overflow_iter, cur_hysteresis. Fix: restore the "
        "checkpoint's file or resume from another checkpoint");
  }
  BERTH_CHECK(
      std::isfinite(loaded.cur_scale) && loaded.cur_scale > 0 && loaded.cur_iter >= 0 &&
          loaded.last_overflow_iter >= -1 && loaded.last_overflow_iter < loaded.cur_iter &&
          loaded.cur_hysteresis >= 0,
      source, " holds an impossible state (", text,
      "): the scale must be positive, cur_iter >= 0, -1 <= last_overflow_iter < cur_iter. Fix: restore "
      "the checkpoint's file or resume from another checkpoint");
  if (dynamic != dynamic_) return false;
  if (!dynamic_) {
    state_.cur_iter = loaded.cur_iter;  // the scale itself is the options'
    return true;
  }
  // A resumed run may set other bounds: keep the scale and hysteresis inside them.
  loaded.cur_scale = std::max(loaded.cur_scale, options_.min_loss_scale);
  loaded.cur_hysteresis = std::clamp(loaded.cur_hysteresis, 1, delayed_shift_);
  state_ = loaded;
  overflows_in_a_row_ = 0;
  return true;
}

bool has_inf_or_nan(const std::vector<at::Tensor>& grads) {
  at::Tensor any_bad;  // a bool scalar on the first grad's device: one sync at the end, not one per tensor
  for (const at::Tensor& grad : grads) {
    if (!grad.defined() || grad.numel() == 0) continue;
    at::Tensor bad = at::logical_not(at::isfinite(grad)).any();
    any_bad = any_bad.defined() ? at::logical_or(any_bad, bad.to(any_bad.device())) : bad;
  }
  return any_bad.defined() && any_bad.item<bool>();
}

}  // namespace berth::train
