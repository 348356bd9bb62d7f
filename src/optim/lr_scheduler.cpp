// HF transformers' schedule lambdas (optimization.py), DeepSpeed's warmup schedules (lr_schedules.py), and
// their state as JSON.
#include "berth/optim/lr_scheduler.h"

#include "berth/core/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace berth::optim {
namespace {

constexpr std::array<std::pair<SchedulerType, std::string_view>, 8> kNames{{
    {SchedulerType::Linear, "linear"},
    {SchedulerType::Cosine, "cosine"},
    {SchedulerType::Constant, "constant"},
    {SchedulerType::ConstantWithWarmup, "constant_with_warmup"},
    {SchedulerType::Polynomial, "polynomial"},
    {SchedulerType::WarmupLR, "WarmupLR"},
    {SchedulerType::WarmupDecayLR, "WarmupDecayLR"},
    {SchedulerType::WarmupCosineLR, "WarmupCosineLR"},
}};

std::string known_names() {
  std::string out;
  for (const auto& [type, name] : kNames) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

// Python's float(a) / float(max(1, b)), as HF writes its ratios.
double ratio(int64_t a, int64_t b) {
  return static_cast<double>(a) / static_cast<double>(std::max<int64_t>(1, b));
}

}  // namespace

bool is_deepspeed_scheduler(SchedulerType type) {
  return type == SchedulerType::WarmupLR || type == SchedulerType::WarmupDecayLR ||
         type == SchedulerType::WarmupCosineLR;
}

SchedulerType parse_scheduler_type(std::string_view name) {
  for (const auto& [type, known] : kNames) {
    if (known == name) return type;
  }
  BERTH_FAIL("unknown lr scheduler type '", name, "', expected one of: ", known_names(),
             ". Fix: pass one of these (HF's --lr_scheduler_type names)");
}

std::string_view to_string(SchedulerType type) {
  for (const auto& [known, name] : kNames) {
    if (known == type) return name;
  }
  BERTH_BUG(false, "SchedulerType ", static_cast<int>(type), " has no name");
  return {};
}

LrScheduler::LrScheduler(double base_lr, SchedulerOptions options) : base_lr_(base_lr), options_(options) {
  BERTH_CHECK(options_.warmup_steps >= 0, "lr scheduler: warmup_steps must be >= 0, found ",
              options_.warmup_steps, ". Fix: pass 0 or more warmup steps");
  BERTH_CHECK(options_.total_steps >= 0, "lr scheduler: total_steps must be >= 0, found ",
              options_.total_steps, ". Fix: pass the number of optimizer steps of the run");
  if (is_deepspeed_scheduler(options_.type)) {
    // DeepSpeed falls back to "log" with a warning; a typo should not silently change the schedule.
    BERTH_CHECK(options_.warmup_type == "log" || options_.warmup_type == "linear", "lr scheduler ",
                to_string(options_.type), ": warmup_type must be \"log\" or \"linear\", found \"",
                options_.warmup_type, "\". Fix: e.g. \"warmup_type\": \"linear\"");
    // DeepSpeed (0.19) raises this ValueError in the constructors of all three; it warms up over at least 2.
    BERTH_CHECK(options_.warmup_steps >= 1, "lr scheduler ", to_string(options_.type),
                ": warmup_steps (DeepSpeed's warmup_num_steps) must be at least 1 (DeepSpeed: "
                "\"warmup_num_steps must be a positive integer, got ",
                options_.warmup_steps,
                "\"). Fix: pass --warmup_steps 1 or more (or --warmup_ratio), or set "
                "\"warmup_num_steps\" in the DeepSpeed config's scheduler params");
  }
  if (options_.type == SchedulerType::Polynomial) {
    // HF raises the same ValueError in get_polynomial_decay_schedule_with_warmup.
    BERTH_CHECK(options_.lr_end < base_lr_, "lr scheduler: polynomial lr_end (", options_.lr_end,
                ") must be smaller than initial lr (", base_lr_,
                "). Fix: lower lr_end or raise the learning rate");
  }
}

double LrScheduler::multiplier(int64_t step) const {
  const int64_t warmup = options_.warmup_steps;
  const int64_t total = options_.total_steps;
  switch (options_.type) {
    case SchedulerType::Constant:
      return 1.0;
    case SchedulerType::ConstantWithWarmup:
      if (step < warmup) return static_cast<double>(step) / std::max(1.0, static_cast<double>(warmup));
      return 1.0;
    case SchedulerType::Linear:
      if (step < warmup) return ratio(step, warmup);
      return std::max(0.0, ratio(total - step, total - warmup));
    case SchedulerType::Cosine: {
      if (step < warmup) return ratio(step, warmup);
      const double progress = ratio(step - warmup, total - warmup);
      return std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * options_.num_cycles * 2.0 * progress)));
    }
    case SchedulerType::WarmupLR:
    case SchedulerType::WarmupDecayLR:
    case SchedulerType::WarmupCosineLR:
      return deepspeed_lr(step) / base_lr_;
    case SchedulerType::Polynomial: {
      if (step < warmup) return ratio(step, warmup);
      if (step > total) return options_.lr_end / base_lr_;
      const double lr_range = base_lr_ - options_.lr_end;
      const double decay_steps = static_cast<double>(total - warmup);
      if (decay_steps <= 0) return options_.lr_end / base_lr_;  // HF divides by zero here
      const double pct_remaining = 1 - static_cast<double>(step - warmup) / decay_steps;
      const double decay = lr_range * std::pow(pct_remaining, options_.power) + options_.lr_end;
      return decay / base_lr_;
    }
  }
  BERTH_BUG(false, "unhandled SchedulerType ", static_cast<int>(options_.type));
  return 0;
}

double LrScheduler::deepspeed_lr(int64_t step) const {
  // DeepSpeed's last_batch_iteration when optimizer step `step` runs: one scheduler.step() per earlier step.
  const int64_t iteration = step - 1;
  const bool cosine = options_.type == SchedulerType::WarmupCosineLR;
  const double min_lr = options_.warmup_min_lr;
  const double max_lr = options_.warmup_max_lr < 0 ? base_lr_ : options_.warmup_max_lr;
  if (iteration < 0) return cosine ? 0.0 : min_lr;  // what the constructor puts in the optimizer
  const int64_t warmup = std::max<int64_t>(2, options_.warmup_steps);
  const int64_t total = options_.total_steps;
  if (iteration < warmup) {
    const double gamma =
        options_.warmup_type == "linear"
            ? static_cast<double>(iteration) / static_cast<double>(warmup)
            : std::log(static_cast<double>(iteration + 1)) / std::log(static_cast<double>(warmup));
    if (cosine) return base_lr_ * (options_.warmup_min_ratio + gamma * (1.0 - options_.warmup_min_ratio));
    return min_lr + (max_lr - min_lr) * gamma;
  }
  switch (options_.type) {
    case SchedulerType::WarmupLR:
      return max_lr;
    case SchedulerType::WarmupDecayLR: {
      const double gamma = std::max(
          0.0, static_cast<double>(total - iteration) / std::max(1.0, static_cast<double>(total - warmup)));
      return min_lr + (max_lr - min_lr) * gamma;
    }
    default: {
      // DeepSpeed 0.19 clamps the progress to 1: from total_num_steps on (and when no steps are left after
      // warmup) the lr stays at cos_min_ratio x lr instead of rising again.
      const double real_last_step = static_cast<double>(iteration - warmup + 1);
      const double real_total_steps = static_cast<double>(std::max<int64_t>(1, total - warmup));
      const double cosine_progress = std::min(1.0, real_last_step / real_total_steps);
      const double cosine_ratio = (1.0 + std::cos(M_PI * cosine_progress)) / 2.0;
      return base_lr_ * std::max(0.0, options_.cos_min_ratio + (1.0 - options_.cos_min_ratio) * cosine_ratio);
    }
  }
}

double LrScheduler::lr_at(int64_t step) const {
  if (is_deepspeed_scheduler(options_.type)) return deepspeed_lr(step);
  return base_lr_ * multiplier(step);
}

std::string LrScheduler::state_json() const {
  nlohmann::ordered_json state;
  state["last_step"] = last_step_;
  state["base_lr"] = base_lr_;
  state["type"] = std::string(to_string(options_.type));
  state["warmup_steps"] = options_.warmup_steps;
  state["total_steps"] = options_.total_steps;
  state["num_cycles"] = options_.num_cycles;
  state["lr_end"] = options_.lr_end;
  state["power"] = options_.power;
  if (is_deepspeed_scheduler(options_.type)) {
    state["warmup_type"] = options_.warmup_type;
    state["warmup_min_lr"] = options_.warmup_min_lr;
    state["warmup_max_lr"] = options_.warmup_max_lr;
    state["warmup_min_ratio"] = options_.warmup_min_ratio;
    state["cos_min_ratio"] = options_.cos_min_ratio;
  }
  return state.dump();
}

void LrScheduler::load_state_json(const std::string& json) {
  const std::string fix =
      ". Fix: resume with the scheduler settings of the saved run (--lr_scheduler_type, --warmup_steps, "
      "--max_steps/epochs, --learning_rate), or start a fresh run";
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    BERTH_FAIL("lr scheduler state: expected a JSON object, found invalid JSON (", e.what(), ")",
               ". Fix: pass the text state_json() wrote");
  }
  BERTH_CHECK(state.is_object(), "lr scheduler state: expected a JSON object, found ", state.type_name(),
              ". Fix: pass the text state_json() wrote");
  auto field = [&](const char* name) -> const nlohmann::json& {
    BERTH_CHECK(state.contains(name), "lr scheduler state: field '", name, "' is missing",
                ". Fix: pass the text state_json() wrote");
    return state.at(name);
  };
  auto number = [&](const char* name, double expected) {
    const nlohmann::json& value = field(name);
    BERTH_CHECK(value.is_number(), "lr scheduler state: field '", name, "' must be a number, found ",
                value.dump(), ". Fix: pass the text state_json() wrote");
    const double found = value.get<double>();
    BERTH_CHECK(found == expected, "lr scheduler state: ", name, " is ", found, " in the saved state but ",
                expected, " in this scheduler", fix);
  };
  auto integer = [&](const char* name, int64_t expected) {
    const nlohmann::json& value = field(name);
    BERTH_CHECK(value.is_number_integer(), "lr scheduler state: field '", name,
                "' must be an integer, found ", value.dump(), ". Fix: pass the text state_json() wrote");
    const int64_t found = value.get<int64_t>();
    BERTH_CHECK(found == expected, "lr scheduler state: ", name, " is ", found, " in the saved state but ",
                expected, " in this scheduler", fix);
  };
  const nlohmann::json& type = field("type");
  BERTH_CHECK(type.is_string() && type.get<std::string>() == to_string(options_.type),
              "lr scheduler state: type is ", type.dump(), " in the saved state but \"",
              to_string(options_.type), "\" in this scheduler", fix);
  number("base_lr", base_lr_);
  integer("warmup_steps", options_.warmup_steps);
  integer("total_steps", options_.total_steps);
  number("num_cycles", options_.num_cycles);
  number("lr_end", options_.lr_end);
  number("power", options_.power);
  if (is_deepspeed_scheduler(options_.type)) {
    const nlohmann::json& warmup_type = field("warmup_type");
    BERTH_CHECK(warmup_type.is_string() && warmup_type.get<std::string>() == options_.warmup_type,
                "lr scheduler state: warmup_type is ", warmup_type.dump(), " in the saved state but \"",
                options_.warmup_type, "\" in this scheduler", fix);
    number("warmup_min_lr", options_.warmup_min_lr);
    number("warmup_max_lr", options_.warmup_max_lr);
    number("warmup_min_ratio", options_.warmup_min_ratio);
    number("cos_min_ratio", options_.cos_min_ratio);
  }
  const nlohmann::json& last = field("last_step");
  BERTH_CHECK(last.is_number_integer() && last.get<int64_t>() >= 0,
              "lr scheduler state: last_step must be an integer >= 0, found ", last.dump(),
              ". Fix: pass the text state_json() wrote");
  last_step_ = last.get<int64_t>();
}

}  // namespace berth::optim
