// fp16's loss scaler: a static scale, or DeepSpeed's DynamicLossScaler
// (deepspeed/runtime/fp16/loss_scaler.py) step for step, with its log lines and a checkpointable state.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "berth/train/precision_options.h"

namespace berth::train {

// What one update(overflow) did.
struct LossScaleUpdate {
  bool skipped = false;  // the step overflowed: the optimizer step must not run (gradients dropped)
  double old_scale = 1;  // the scale the step's loss was multiplied by
  double new_scale = 1;  // the scale for the next step
  // DeepSpeed's rank-0 line for an overflow, e.g. "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted
  // loss scale: 65536, reducing to 32768"; empty when the step did not overflow.
  std::string log_line;
};

// The dynamic scaler's state, DeepSpeed's attribute names.
struct LossScalerState {
  double cur_scale = 1;
  int64_t cur_iter = 0;
  int64_t last_overflow_iter = -1;
  int cur_hysteresis = 1;
};

// Static (options.loss_scale > 0: that scale forever; an overflowing step is still skipped, as DeepSpeed's
// static LossScaler) or dynamic (options.loss_scale == 0: starts at 2^initial_scale_power, halves after
// `hysteresis` overflows, doubles at the (loss_scale_window + 1)-th step in a row without one, as DeepSpeed
// 0.19 does, never below min_loss_scale).
// The Trainer multiplies the loss by scale() before backward, tells GradientSync::step the same scale (it
// unscales and reports overflow), then calls update(result.overflow) once per optimizer step.
class LossScaler {
 public:
  // Throws berth::Error for options DeepSpeed would misbehave on (negative scale, window < 1, ...).
  // `rank` only appears in the log line.
  explicit LossScaler(const LossScaleOptions& options, int64_t rank = 0);

  bool dynamic() const { return dynamic_; }
  double scale() const { return state_.cur_scale; }
  const LossScalerState& state() const { return state_; }
  const LossScaleOptions& options() const { return options_; }

  // DeepSpeed's update_scale(overflow). An overflow while the dynamic scale already sits at min_loss_scale
  // (with hysteresis used up) throws berth::Error: the run cannot go on.
  LossScaleUpdate update(bool overflow);

  // {"cur_scale":..,"cur_iter":..,"last_overflow_iter":..,"cur_hysteresis":..,"dynamic":..} for checkpoints.
  std::string state_json() const;
  // Restores state_json()'s text (`source` names it in errors; malformed text throws berth::Error) and
  // returns true. A state of the other kind (a static run's checkpoint resumed with dynamic scaling, or the
  // reverse) is ignored and returns false: the options of this run win and the scaler starts fresh.
  bool load_state_json(const std::string& text, const std::string& source = "loss scaler state");

 private:
  LossScaleOptions options_;
  bool dynamic_ = true;
  int delayed_shift_ = 1;
  int64_t rank_ = 0;
  int64_t overflows_in_a_row_ = 0;  // for the min-scale error's text
  LossScalerState state_;
};

// Whether any defined tensor holds an inf or a nan (DeepSpeed's has_overflow_serial), with one host sync.
// Undefined tensors (parameters without grad) are skipped.
bool has_inf_or_nan(const std::vector<at::Tensor>& grads);

}  // namespace berth::train
