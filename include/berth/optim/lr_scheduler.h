// HF transformers' learning-rate schedules (transformers/optimization.py), as LambdaLR applies them, and
// DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR (deepspeed/runtime/lr_schedules.py).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace berth::optim {

enum class SchedulerType {
  Linear,
  Cosine,
  Constant,
  ConstantWithWarmup,
  Polynomial,
  WarmupLR,        // DeepSpeed
  WarmupDecayLR,   // DeepSpeed
  WarmupCosineLR,  // DeepSpeed
};

// "linear", "cosine", "constant", "constant_with_warmup", "polynomial" (HF's names) and DeepSpeed's
// "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"; else berth::Error listing them.
SchedulerType parse_scheduler_type(std::string_view name);
std::string_view to_string(SchedulerType type);

struct SchedulerOptions {
  SchedulerType type = SchedulerType::Linear;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  double num_cycles = 0.5;  // cosine
  double lr_end = 1e-7;     // polynomial
  double power = 1.0;       // polynomial
  // DeepSpeed's schedules: warmup_steps is warmup_num_steps (at least 1, as DeepSpeed requires; it warms up
  // over at least 2), total_steps is total_num_steps (WarmupDecayLR, WarmupCosineLR).
  std::string warmup_type = "log";  // "log" or "linear": how the warmup rises
  double warmup_min_lr = 0.0;       // WarmupLR, WarmupDecayLR: the lr warmup starts from
  double warmup_max_lr = -1;        // WarmupLR, WarmupDecayLR: the lr warmup ends at; < 0: base_lr
  double warmup_min_ratio = 0.0;    // WarmupCosineLR: warmup starts at this fraction of base_lr
  double cos_min_ratio = 0.0001;    // WarmupCosineLR: the cosine ends at this fraction of base_lr
};

// Whether `type` is one of DeepSpeed's schedules.
bool is_deepspeed_scheduler(SchedulerType type);

class LrScheduler {
 public:
  // Throws berth::Error for negative step counts, for polynomial with lr_end >= base_lr (as HF), and for
  // DeepSpeed's schedules with warmup_steps < 1 (as DeepSpeed).
  LrScheduler(double base_lr, SchedulerOptions options);

  // base_lr times HF's lambda of `step` (LambdaLR: lr_at(0) is the lr of the first optimizer step).
  // DeepSpeed's schedules: the lr DeepSpeed's engine gives optimizer step `step` (0-based), which calls
  // scheduler.step() after every optimizer step: lr_at(0) is the value set at construction (warmup_min_lr;
  // WarmupCosineLR: 0) and lr_at(k) is get_lr() with last_batch_iteration = k - 1.
  double lr_at(int64_t step) const;
  double lr() const { return lr_at(last_step_); }
  void step() { ++last_step_; }
  int64_t last_step() const { return last_step_; }
  double base_lr() const { return base_lr_; }
  const SchedulerOptions& options() const { return options_; }

  // {"last_step":..,"base_lr":..,"type":"linear","warmup_steps":..,"total_steps":..,"num_cycles":..,
  //  "lr_end":..,"power":..}; DeepSpeed's types add "warmup_type", "warmup_min_lr", "warmup_max_lr",
  //  "warmup_min_ratio", "cos_min_ratio".
  std::string state_json() const;
  // Restores last_step. Throws berth::Error when the JSON is invalid or its schedule differs from this one
  // (naming the field, both values and the fix).
  void load_state_json(const std::string& json);

 private:
  double multiplier(int64_t step) const;
  double deepspeed_lr(int64_t step) const;

  double base_lr_;
  SchedulerOptions options_;
  int64_t last_step_ = 0;
};

}  // namespace berth::optim
