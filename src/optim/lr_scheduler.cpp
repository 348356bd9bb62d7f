// HF transformers' schedule lambdas (optimization.py), torch's ReduceLROnPlateau, DeepSpeed's warmup
// schedules (lr_schedules.py), and their state as JSON.
#include "berth/optim/lr_scheduler.h"

#include "berth/core/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace berth::optim {
namespace {

constexpr std::array<std::pair<SchedulerType, std::string_view>, 13> kNames{{
    {SchedulerType::Linear, "linear"},
    {SchedulerType::Cosine, "cosine"},
    {SchedulerType::Constant, "constant"},
    {SchedulerType::ConstantWithWarmup, "constant_with_warmup"},
    {SchedulerType::Polynomial, "polynomial"},
    {SchedulerType::CosineWithRestarts, "cosine_with_restarts"},
    {SchedulerType::InverseSqrt, "inverse_sqrt"},
    {SchedulerType::ReduceLROnPlateau, "reduce_lr_on_plateau"},
    {SchedulerType::CosineWithMinLr, "cosine_with_min_lr"},
    {SchedulerType::WarmupStableDecay, "warmup_stable_decay"},
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

// The options of HF's newer schedules, as saved with the state (empty for the others, whose older states
// had no such field).
nlohmann::json newer_options_json(const SchedulerOptions& options) {
  const auto optional = [](const auto& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  switch (options.type) {
    case SchedulerType::InverseSqrt:
      return {{"timescale", optional(options.timescale)}};
    case SchedulerType::CosineWithMinLr:
      return {{"min_lr_rate", optional(options.min_lr_rate)}};
    case SchedulerType::WarmupStableDecay:
      return {{"num_decay_steps", options.num_decay_steps},
              {"num_stable_steps", optional(options.num_stable_steps)},
              {"warmup_type", options.wsd_warmup_type},
              {"decay_type", options.decay_type},
              {"min_lr_ratio", options.min_lr_ratio}};
    case SchedulerType::ReduceLROnPlateau: {
      const PlateauOptions& p = options.plateau;
      return {{"mode", p.mode},
              {"factor", p.factor},
              {"patience", p.patience},
              {"threshold", p.threshold},
              {"threshold_mode", p.threshold_mode},
              {"cooldown", p.cooldown},
              {"min_lr", p.min_lr},
              {"eps", p.eps}};
    }
    default:
      return nlohmann::json::object();
  }
}

bool is_wsd_shape(const std::string& type) {
  return type == "linear" || type == "cosine" || type == "1-sqrt";
}

// The checks HF's schedule functions and torch's ReduceLROnPlateau make on their arguments.
void check_hf_options(const SchedulerOptions& options, double base_lr) {
  if (options.type == SchedulerType::Polynomial) {
    // HF raises the same ValueError in get_polynomial_decay_schedule_with_warmup.
    BERTH_CHECK(options.lr_end < base_lr, "lr scheduler: polynomial lr_end (", options.lr_end,
                ") must be smaller than initial lr (", base_lr,
                "). Fix: lower lr_end or raise the learning rate");
  }
  if (options.type == SchedulerType::CosineWithMinLr)
    BERTH_CHECK(options.min_lr_rate.has_value(),
                "lr scheduler cosine_with_min_lr needs min_lr or min_lr_rate, found neither (HF: \"One of "
                "min_lr or min_lr_rate should be set through the `lr_scheduler_kwargs`\"). Fix: e.g. "
                "--lr_scheduler_kwargs '{\"min_lr_rate\": 0.1}'");
  if (options.type == SchedulerType::WarmupStableDecay) {
    BERTH_CHECK(is_wsd_shape(options.wsd_warmup_type),
                "lr scheduler warmup_stable_decay: warmup_type must be linear, cosine or 1-sqrt, found '",
                options.wsd_warmup_type, "'. Fix: e.g. \"warmup_type\": \"linear\"");
    BERTH_CHECK(is_wsd_shape(options.decay_type),
                "lr scheduler warmup_stable_decay: decay_type must be linear, cosine or 1-sqrt, found '",
                options.decay_type, "'. Fix: e.g. \"decay_type\": \"cosine\"");
  }
  if (options.type == SchedulerType::ReduceLROnPlateau) {
    const PlateauOptions& plateau = options.plateau;
    BERTH_CHECK(plateau.factor < 1.0,
                "lr scheduler reduce_lr_on_plateau: factor must be < 1 (torch: "
                "\"Factor should be < 1.0.\"), found ",
                plateau.factor, ". Fix: e.g. \"factor\": 0.5");
    BERTH_CHECK(plateau.mode == "min" || plateau.mode == "max",
                "lr scheduler reduce_lr_on_plateau: mode must be min or max, found '", plateau.mode,
                "'. Fix: \"mode\": \"min\" for a loss, \"max\" for accuracy-like metrics");
    BERTH_CHECK(plateau.threshold_mode == "rel" || plateau.threshold_mode == "abs",
                "lr scheduler reduce_lr_on_plateau: threshold_mode must be rel or abs, found '",
                plateau.threshold_mode, "'. Fix: \"threshold_mode\": \"rel\"");
  }
}

// warmup_stable_decay's warmup and decay curves over progress in [0, 1] (HF's _get_wsd_scheduler_lambda).
double wsd_rise(const std::string& type, double progress) {
  if (type == "linear") return progress;
  if (type == "cosine") return 0.5 * (1.0 - std::cos(M_PI * progress));
  return 1.0 - std::sqrt(1.0 - progress);
}

double wsd_fall(const std::string& type, double progress, double num_cycles) {
  if (type == "linear") return 1.0 - progress;
  if (type == "cosine") return 0.5 * (1.0 + std::cos(M_PI * num_cycles * 2.0 * progress));
  return 1.0 - std::sqrt(progress);
}

double wsd_multiplier(const SchedulerOptions& options, int64_t step) {
  const int64_t warmup = options.warmup_steps;
  const int64_t stable =
      options.num_stable_steps.value_or(options.total_steps - warmup - options.num_decay_steps);
  if (step < warmup) {
    const double factor = wsd_rise(options.wsd_warmup_type, ratio(step, warmup));
    return std::max(0.0, factor * (1.0 - options.min_lr_ratio) + options.min_lr_ratio);
  }
  if (step < warmup + stable) return 1.0;
  if (step < warmup + stable + options.num_decay_steps) {
    const double factor = wsd_fall(options.decay_type, ratio(step - warmup - stable, options.num_decay_steps),
                                   options.num_cycles);
    return std::max(0.0, factor * (1.0 - options.min_lr_ratio) + options.min_lr_ratio);
  }
  return options.min_lr_ratio;
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
  check_hf_options(options_, base_lr_);
  plateau_lr_ = base_lr_;
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
    default:
      return newer_hf_multiplier(step);
  }
  BERTH_BUG(false, "unhandled SchedulerType ", static_cast<int>(options_.type));
  return 0;
}

// The schedules transformers added after the first five (optimization.py's lambdas of the same names).
double LrScheduler::newer_hf_multiplier(int64_t step) const {
  const int64_t warmup = options_.warmup_steps;
  const int64_t total = options_.total_steps;
  switch (options_.type) {
    case SchedulerType::CosineWithRestarts: {
      if (step < warmup) return ratio(step, warmup);
      const double progress = ratio(step - warmup, total - warmup);
      if (progress >= 1.0) return 0.0;
      return std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * std::fmod(options_.num_cycles * progress, 1.0))));
    }
    case SchedulerType::InverseSqrt: {
      if (step < warmup) return ratio(step, warmup);
      const int64_t timescale = options_.timescale.value_or(warmup > 0 ? warmup : 10000);
      const double shifted = static_cast<double>(step + timescale - warmup) / static_cast<double>(timescale);
      return 1.0 / std::sqrt(shifted);
    }
    case SchedulerType::CosineWithMinLr: {
      if (step < warmup) return ratio(step, warmup);
      const double progress = ratio(step - warmup, total - warmup);
      const double factor = 0.5 * (1.0 + std::cos(M_PI * options_.num_cycles * 2.0 * progress));
      const double rate = options_.min_lr_rate.value_or(0.0);
      return std::max(0.0, factor * (1 - rate) + rate);
    }
    case SchedulerType::WarmupStableDecay:
      return wsd_multiplier(options_, step);
    case SchedulerType::ReduceLROnPlateau:
      return plateau_lr_ / base_lr_;
    default:
      BERTH_BUG(false, "unhandled SchedulerType ", static_cast<int>(options_.type));
      return 0;
  }
}

bool LrScheduler::plateau_is_better(double metric) const {
  const PlateauOptions& p = options_.plateau;
  if (!plateau_best_) return p.mode == "min" ? metric < INFINITY : metric > -INFINITY;  // torch's inf best
  const double best = *plateau_best_;
  if (p.mode == "min")
    return p.threshold_mode == "rel" ? metric < best * (1.0 - p.threshold) : metric < best - p.threshold;
  return p.threshold_mode == "rel" ? metric > best * (p.threshold + 1.0) : metric > best + p.threshold;
}

// torch's ReduceLROnPlateau.step(metrics), for one param group.
void LrScheduler::step_on_metric(double metric) {
  BERTH_BUG(steps_on_metric(), "step_on_metric on the ", to_string(options_.type), " schedule");
  const PlateauOptions& p = options_.plateau;
  if (plateau_is_better(metric)) {
    plateau_best_ = metric;
    plateau_bad_ = 0;
  } else {
    ++plateau_bad_;
  }
  if (plateau_cooldown_ > 0) {
    --plateau_cooldown_;
    plateau_bad_ = 0;  // bad evaluations in the cooldown are not counted
  }
  if (plateau_bad_ > p.patience) {
    const double reduced = std::max(plateau_lr_ * p.factor, p.min_lr);
    if (plateau_lr_ - reduced > p.eps) plateau_lr_ = reduced;
    plateau_cooldown_ = p.cooldown;
    plateau_bad_ = 0;
  }
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
  const nlohmann::json newer = newer_options_json(options_);
  if (!newer.empty()) state["options"] = newer;
  if (steps_on_metric()) {
    state["plateau"] = {{"lr", plateau_lr_},
                        {"best", plateau_best_ ? nlohmann::json(*plateau_best_) : nlohmann::json(nullptr)},
                        {"num_bad_epochs", plateau_bad_},
                        {"cooldown_counter", plateau_cooldown_}};
  }
  return state.dump();
}

void LrScheduler::load_plateau_state(const nlohmann::json& state) {
  const auto bad = [&] {
    BERTH_FAIL(
        "lr scheduler state: reduce_lr_on_plateau needs a \"plateau\" object {lr, best, "
        "num_bad_epochs, cooldown_counter}, found ",
        state.contains("plateau") ? state.at("plateau").dump() : std::string("none"),
        ". Fix: pass the text state_json() wrote");
  };
  if (!state.contains("plateau") || !state.at("plateau").is_object()) bad();
  const nlohmann::json& plateau = state.at("plateau");
  for (const char* key : {"lr", "best", "num_bad_epochs", "cooldown_counter"})
    if (!plateau.contains(key)) bad();
  if (!plateau.at("lr").is_number() || !(plateau.at("best").is_number() || plateau.at("best").is_null()) ||
      !plateau.at("num_bad_epochs").is_number_integer() ||
      !plateau.at("cooldown_counter").is_number_integer())
    bad();
  plateau_lr_ = plateau.at("lr").get<double>();
  plateau_best_.reset();
  if (plateau.at("best").is_number()) plateau_best_ = plateau.at("best").get<double>();
  plateau_bad_ = plateau.at("num_bad_epochs").get<int64_t>();
  plateau_cooldown_ = plateau.at("cooldown_counter").get<int64_t>();
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
  const nlohmann::json newer = newer_options_json(options_);
  const nlohmann::json saved_newer =
      state.contains("options") ? state.at("options") : nlohmann::json::object();
  BERTH_CHECK(saved_newer == newer, "lr scheduler state: the ", to_string(options_.type), " options are ",
              saved_newer.dump(), " in the saved state but ", newer.dump(), " in this scheduler",
              ". Fix: resume with the saved run's --lr_scheduler_kwargs, or start a fresh run");
  if (steps_on_metric()) load_plateau_state(state);
  const nlohmann::json& last = field("last_step");
  BERTH_CHECK(last.is_number_integer() && last.get<int64_t>() >= 0,
              "lr scheduler state: last_step must be an integer >= 0, found ", last.dump(),
              ". Fix: pass the text state_json() wrote");
  last_step_ = last.get<int64_t>();
}

}  // namespace berth::optim
