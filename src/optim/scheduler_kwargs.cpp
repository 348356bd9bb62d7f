// HF's lr_scheduler_kwargs read into SchedulerOptions, by the keyword names of transformers' schedule
// functions (optimization.py) and torch's ReduceLROnPlateau.
#include "berth/optim/scheduler_kwargs.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "berth/core/error.h"
#include "core/text.h"

namespace berth::optim {
namespace {

using Json = nlohmann::json;

const std::string kFix =
    ". Fix: write lr_scheduler_kwargs as in HF, e.g. --lr_scheduler_kwargs "
    "'{\"num_cycles\": 2}' with --lr_scheduler_type cosine_with_restarts";

Json parse_kwargs(const std::string& kwargs_json) {
  if (text::trim(kwargs_json).empty()) return Json::object();
  Json kwargs;
  try {
    kwargs = Json::parse(kwargs_json);
  } catch (const Json::exception& e) {
    BERTH_FAIL("lr_scheduler_kwargs: expected a JSON object, found invalid JSON '", kwargs_json, "' (",
               e.what(), ")", kFix);
  }
  if (kwargs.is_null()) return Json::object();
  BERTH_CHECK(kwargs.is_object(), "lr_scheduler_kwargs: expected a JSON object, found ", kwargs.dump(), kFix);
  return kwargs;
}

// One kwarg's value, checked for its JSON type and named in the message.
struct Kwargs {
  const Json& json;
  std::string_view type;
  bool has(const char* name) const { return json.contains(name) && !json.at(name).is_null(); }
  [[noreturn]] void bad(const char* name, const char* expected) const {
    BERTH_FAIL("lr_scheduler_kwargs for ", type, ": \"", name, "\" must be ", expected, ", found ",
               json.at(name).dump(), kFix);
  }
  double number(const char* name) const {
    if (!json.at(name).is_number()) bad(name, "a number");
    return json.at(name).get<double>();
  }
  int64_t integer(const char* name) const {
    const Json& value = json.at(name);
    // Python passes 10.0 where 10 was meant; range() or a comparison takes it alike.
    if (value.is_number_integer()) return value.get<int64_t>();
    if (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>())
      return static_cast<int64_t>(value.get<double>());
    bad(name, "a whole number");
  }
  std::string string(const char* name) const {
    if (!json.at(name).is_string()) bad(name, "a string");
    return json.at(name).get<std::string>();
  }
};

void check_names(const Json& kwargs, SchedulerType type) {
  const std::vector<std::string> known = scheduler_kwarg_names(type);
  std::vector<std::string> unknown;
  for (const auto& item : kwargs.items())
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) unknown.push_back(item.key());
  if (unknown.empty()) return;
  BERTH_FAIL("lr_scheduler_kwargs: ", to_string(type), " takes ",
             known.empty() ? std::string("no keyword arguments") : text::join(known, ", "), ", found ",
             text::join(unknown, ", "), ". Fix: remove ", text::join(unknown, ", "),
             known.empty() ? std::string(" (this schedule has no options)")
                           : " or use the names above (HF's, as transformers' schedule function takes them)");
}

void read_cosine_with_min_lr(const Kwargs& kwargs, double base_lr, SchedulerOptions& options) {
  BERTH_CHECK(!(kwargs.has("min_lr") && kwargs.has("min_lr_rate")),
              "lr_scheduler_kwargs for cosine_with_min_lr: set min_lr or min_lr_rate, found both (HF: \"Only "
              "one of min_lr or min_lr_rate should be set\"). Fix: keep one of them");
  if (kwargs.has("num_cycles")) options.num_cycles = kwargs.number("num_cycles");
  if (kwargs.has("min_lr_rate")) options.min_lr_rate = kwargs.number("min_lr_rate");
  if (kwargs.has("min_lr"))
    options.min_lr_rate = kwargs.number("min_lr") / base_lr;  // HF: min_lr / optimizer lr
}

void read_wsd(const Kwargs& kwargs, SchedulerOptions& options) {
  BERTH_CHECK(kwargs.has("num_decay_steps"),
              "lr_scheduler_kwargs for warmup_stable_decay: num_decay_steps is required (HF's "
              "get_wsd_schedule has no default), found it missing. Fix: e.g. --lr_scheduler_kwargs "
              "'{\"num_decay_steps\": 100}'");
  options.num_decay_steps = kwargs.integer("num_decay_steps");
  if (kwargs.has("num_stable_steps")) options.num_stable_steps = kwargs.integer("num_stable_steps");
  if (kwargs.has("warmup_type")) options.wsd_warmup_type = kwargs.string("warmup_type");
  if (kwargs.has("decay_type")) options.decay_type = kwargs.string("decay_type");
  if (kwargs.has("min_lr_ratio")) options.min_lr_ratio = kwargs.number("min_lr_ratio");
  if (kwargs.has("num_cycles")) options.num_cycles = kwargs.number("num_cycles");
}

void read_plateau(const Kwargs& kwargs, PlateauOptions& p) {
  if (kwargs.has("mode")) p.mode = kwargs.string("mode");
  if (kwargs.has("factor")) p.factor = kwargs.number("factor");
  if (kwargs.has("patience")) p.patience = kwargs.integer("patience");
  if (kwargs.has("threshold")) p.threshold = kwargs.number("threshold");
  if (kwargs.has("threshold_mode")) p.threshold_mode = kwargs.string("threshold_mode");
  if (kwargs.has("cooldown")) p.cooldown = kwargs.integer("cooldown");
  if (kwargs.has("min_lr")) p.min_lr = kwargs.number("min_lr");
  if (kwargs.has("eps")) p.eps = kwargs.number("eps");
}

void read_kwargs(const Kwargs& kwargs, double base_lr, SchedulerOptions& options) {
  switch (options.type) {
    case SchedulerType::Cosine:
    case SchedulerType::CosineWithRestarts:
      if (kwargs.has("num_cycles")) options.num_cycles = kwargs.number("num_cycles");
      break;
    case SchedulerType::Polynomial:
      if (kwargs.has("lr_end")) options.lr_end = kwargs.number("lr_end");
      if (kwargs.has("power")) options.power = kwargs.number("power");
      break;
    case SchedulerType::InverseSqrt:
      if (kwargs.has("timescale")) options.timescale = kwargs.integer("timescale");
      break;
    case SchedulerType::CosineWithMinLr:
      read_cosine_with_min_lr(kwargs, base_lr, options);
      break;
    case SchedulerType::WarmupStableDecay:
      read_wsd(kwargs, options);
      break;
    case SchedulerType::ReduceLROnPlateau:
      read_plateau(kwargs, options.plateau);
      break;
    default:
      break;
  }
}

}  // namespace

std::vector<std::string> scheduler_kwarg_names(SchedulerType type) {
  switch (type) {
    case SchedulerType::Cosine:
    case SchedulerType::CosineWithRestarts:
      return {"num_cycles"};
    case SchedulerType::Polynomial:
      return {"lr_end", "power"};
    case SchedulerType::InverseSqrt:
      return {"timescale"};
    case SchedulerType::CosineWithMinLr:
      return {"min_lr", "min_lr_rate", "num_cycles"};
    case SchedulerType::WarmupStableDecay:
      return {"decay_type",      "min_lr_ratio",     "num_cycles",
              "num_decay_steps", "num_stable_steps", "warmup_type"};
    case SchedulerType::ReduceLROnPlateau:
      return {"cooldown", "eps", "factor", "min_lr", "mode", "patience", "threshold", "threshold_mode"};
    default:
      return {};
  }
}

SchedulerOptions hf_scheduler_options(std::string_view type_name, int64_t warmup_steps, int64_t total_steps,
                                      double base_lr, const std::string& kwargs_json) {
  SchedulerOptions options;
  options.type = parse_scheduler_type(type_name);
  BERTH_CHECK(
      !is_deepspeed_scheduler(options.type), "lr_scheduler_type ", type_name,
      " is one of DeepSpeed's schedules, which a DeepSpeed config's \"scheduler\" block selects. Fix: "
      "use one of HF's names (linear, cosine, ...) or put the scheduler in the DeepSpeed config");
  options.warmup_steps = warmup_steps;
  options.total_steps = total_steps;
  if (options.type == SchedulerType::CosineWithRestarts) options.num_cycles = 1.0;  // HF's default there
  const Json kwargs = parse_kwargs(kwargs_json);
  check_names(kwargs, options.type);
  read_kwargs(Kwargs{kwargs, to_string(options.type)}, base_lr, options);
  return options;
}

void check_scheduler_kwargs_json(const std::string& kwargs_json) { parse_kwargs(kwargs_json); }

}  // namespace berth::optim
