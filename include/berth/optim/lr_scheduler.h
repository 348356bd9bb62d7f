// HF transformers' learning-rate schedules (transformers/optimization.py), as LambdaLR applies them, torch's
// ReduceLROnPlateau (HF's reduce_lr_on_plateau), and DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR
// (deepspeed/runtime/lr_schedules.py).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace berth::optim {

enum class SchedulerType {
  Linear,
  Cosine,
  Constant,
  ConstantWithWarmup,
  Polynomial,
  CosineWithRestarts,
  InverseSqrt,
  ReduceLROnPlateau,  // steps on an evaluation metric, not on optimizer steps
  CosineWithMinLr,
  WarmupStableDecay,
  WarmupLR,        // DeepSpeed
  WarmupDecayLR,   // DeepSpeed
  WarmupCosineLR,  // DeepSpeed
};

// HF's names ("linear", "cosine", "constant", "constant_with_warmup", "polynomial", "cosine_with_restarts",
// "inverse_sqrt", "reduce_lr_on_plateau", "cosine_with_min_lr", "warmup_stable_decay") and DeepSpeed's
// "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"; else berth::Error listing them.
SchedulerType parse_scheduler_type(std::string_view name);
std::string_view to_string(SchedulerType type);

// torch.optim.lr_scheduler.ReduceLROnPlateau's arguments, with its defaults.
struct PlateauOptions {
  std::string mode = "min";  // min: the metric should fall; max: rise
  double factor = 0.1;       // new lr = lr * factor (must be < 1)
  int64_t patience = 10;     // evaluations without improvement tolerated before reducing
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // rel: best * (1 -/+ threshold); abs: best -/+ threshold
  int64_t cooldown = 0;                // evaluations after a reduction during which bad ones are not counted
  double min_lr = 0.0;
  double eps = 1e-8;  // a reduction smaller than this is skipped
};

struct SchedulerOptions {
  SchedulerType type = SchedulerType::Linear;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  double num_cycles = 0.5;  // cosine, cosine_with_min_lr, warmup_stable_decay; cosine_with_restarts: 1
  double lr_end = 1e-7;     // polynomial
  double power = 1.0;       // polynomial
  // cosine_with_min_lr: the cosine ends at this fraction of base_lr (HF's min_lr_rate, or min_lr / base_lr);
  // HF requires one of the two.
  std::optional<double> min_lr_rate;
  std::optional<int64_t> timescale;  // inverse_sqrt; unset: warmup_steps, or 10000 without warmup (HF)
  // warmup_stable_decay: warmup (wsd_warmup_type: linear, cosine, 1-sqrt) from min_lr_ratio to 1, stable
  // steps (unset: total - warmup - decay), decay (decay_type) to min_lr_ratio over num_decay_steps.
  int64_t num_decay_steps = 0;
  std::optional<int64_t> num_stable_steps;
  std::string wsd_warmup_type = "linear";
  std::string decay_type = "cosine";
  double min_lr_ratio = 0.0;
  PlateauOptions plateau;  // reduce_lr_on_plateau
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
  // Throws berth::Error for negative step counts, for the option values HF or torch raise on (polynomial
  // with lr_end >= base_lr, cosine_with_min_lr without a min_lr_rate, warmup_stable_decay's unknown warmup
  // or decay types, ReduceLROnPlateau's factor >= 1 or unknown modes), and for DeepSpeed's schedules with
  // warmup_steps < 1 (as DeepSpeed).
  LrScheduler(double base_lr, SchedulerOptions options);

  // base_lr times HF's lambda of `step` (LambdaLR: lr_at(0) is the lr of the first optimizer step).
  // DeepSpeed's schedules: the lr DeepSpeed's engine gives optimizer step `step` (0-based), which calls
  // scheduler.step() after every optimizer step: lr_at(0) is the value set at construction (warmup_min_lr;
  // WarmupCosineLR: 0) and lr_at(k) is get_lr() with last_batch_iteration = k - 1.
  // reduce_lr_on_plateau: the lr as its metric steps left it, whatever `step`.
  double lr_at(int64_t step) const;
  double lr() const { return lr_at(last_step_); }
  void step() { ++last_step_; }
  int64_t last_step() const { return last_step_; }
  double base_lr() const { return base_lr_; }
  // Whether this schedule moves on evaluation metrics (reduce_lr_on_plateau) rather than on step().
  bool steps_on_metric() const { return options_.type == SchedulerType::ReduceLROnPlateau; }
  // ReduceLROnPlateau.step(metric): counts an evaluation without improvement, reduces the lr by `factor`
  // after more than `patience` of them (then waits `cooldown` evaluations). Only for reduce_lr_on_plateau.
  void step_on_metric(double metric);
  const SchedulerOptions& options() const { return options_; }

  // {"last_step":..,"base_lr":..,"type":"linear","warmup_steps":..,"total_steps":..,"num_cycles":..,
  //  "lr_end":..,"power":..}; DeepSpeed's types add "warmup_type", "warmup_min_lr", "warmup_max_lr",
  //  "warmup_min_ratio", "cos_min_ratio"; HF's newer types their options; reduce_lr_on_plateau its state
  //  ("plateau": lr, best, num_bad_epochs, cooldown_counter).
  std::string state_json() const;
  // Restores last_step. Throws berth::Error when the JSON is invalid or its schedule differs from this one
  // (naming the field, both values and the fix).
  void load_state_json(const std::string& json);

 private:
  double multiplier(int64_t step) const;
  double deepspeed_lr(int64_t step) const;
  double newer_hf_multiplier(int64_t step) const;
  bool plateau_is_better(double metric) const;
  void load_plateau_state(const nlohmann::json& state);

  double base_lr_;
  SchedulerOptions options_;
  int64_t last_step_ = 0;
  // ReduceLROnPlateau's state: its lr, the best metric (unset: none yet, torch's inf / -inf) and counters.
  double plateau_lr_ = 0;
  std::optional<double> plateau_best_;
  int64_t plateau_bad_ = 0;
  int64_t plateau_cooldown_ = 0;
};

}  // namespace berth::optim
