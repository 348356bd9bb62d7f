// TrainerState: HF's trainer_state.json, read and written.
#include "berth/train/trainer_state.h"
#include "berth/core/input_file.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"

namespace berth::train {
namespace {

using Json = nlohmann::json;

[[noreturn]] void bad_type(const std::string& source, const std::string& key, const char* expected,
                           const Json& found) {
  BERTH_FAIL(source, ": \"", key, "\" must be ", expected, ", found ", found.dump(),
             ". Fix: pass a trainer_state.json written by berth or HF, or repair that key");
}

Json parse_object(const std::string& text, const std::string& source, const char* what) {
  Json value;
  try {
    value = Json::parse(text);
  } catch (const Json::exception& e) {
    BERTH_FAIL(source, ": ", what, " is not valid JSON (", e.what(), "). Fix: repair or remove the file");
  }
  return value;
}

// Python's json writes whole floats as 12.0 and huge ints as ints; an int field accepts any whole number.
int64_t get_int(const std::string& source, const std::string& key, const Json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (std::floor(v) == v && std::fabs(v) < 9e18) return static_cast<int64_t>(v);
  }
  bad_type(source, key, "a whole number", value);
}

double get_double(const std::string& source, const std::string& key, const Json& value) {
  if (!value.is_number()) bad_type(source, key, "a number", value);
  return value.get<double>();
}

bool get_bool(const std::string& source, const std::string& key, const Json& value) {
  if (!value.is_boolean()) bad_type(source, key, "true or false", value);
  return value.get<bool>();
}

std::string get_string(const std::string& source, const std::string& key, const Json& value) {
  if (!value.is_string()) bad_type(source, key, "a string", value);
  return value.get<std::string>();
}

}  // namespace

std::string TrainerState::to_json_text() const {
  Json root = parse_object(extra_fields_json, "TrainerState", "extra_fields_json");
  BERTH_BUG(root.is_object(), "extra_fields_json must hold a JSON object");
  Json history = Json::array();
  for (const LogEntry& entry : log_history) {
    Json item = Json::object();
    for (const auto& [key, value] : entry) {
      // HF's "step" and "total_flos"-like counters are ints; keep whole values that are counts as ints.
      if (key == "step" && std::floor(value) == value)
        item[key] = static_cast<int64_t>(value);
      else
        item[key] = value;
    }
    history.push_back(std::move(item));
  }
  root["best_global_step"] = best_global_step ? Json(*best_global_step) : Json(nullptr);
  root["best_metric"] = best_metric ? Json(*best_metric) : Json(nullptr);
  root["best_model_checkpoint"] = best_model_checkpoint ? Json(*best_model_checkpoint) : Json(nullptr);
  root["epoch"] = epoch;
  root["eval_steps"] = eval_steps;
  root["global_step"] = global_step;
  root["is_hyper_param_search"] = is_hyper_param_search;
  root["is_local_process_zero"] = is_local_process_zero;
  root["is_world_process_zero"] = is_world_process_zero;
  root["log_history"] = std::move(history);
  root["logging_steps"] = logging_steps;
  root["max_steps"] = max_steps;
  root["num_input_tokens_seen"] = num_input_tokens_seen;
  root["num_train_epochs"] = num_train_epochs;
  root["save_steps"] = save_steps;
  root["stateful_callbacks"] =
      parse_object(stateful_callbacks_json, "TrainerState", "stateful_callbacks_json");
  root["total_flos"] = total_flos;
  root["train_batch_size"] = train_batch_size;
  root["trial_name"] = trial_name ? Json(*trial_name) : Json(nullptr);
  root["trial_params"] = parse_object(trial_params_json, "TrainerState", "trial_params_json");
  return root.dump(2) + "\n";
}

TrainerState TrainerState::from_json_text(const std::string& text, const std::string& source) {
  const Json root = parse_object(text, source, "the trainer state");
  BERTH_CHECK(root.is_object(), source, " must hold one JSON object (HF's trainer_state.json), found ",
              root.type_name(), ". Fix: pass the trainer_state.json of a checkpoint folder");
  TrainerState state;
  Json extra = Json::object();
  for (const auto& [key, value] : root.items()) {
    if (key == "epoch") {
      state.epoch = value.is_null() ? 0.0 : get_double(source, key, value);  // HF's default is None
    } else if (key == "global_step") {
      state.global_step = get_int(source, key, value);
    } else if (key == "max_steps") {
      state.max_steps = get_int(source, key, value);
    } else if (key == "logging_steps") {
      state.logging_steps = get_int(source, key, value);
    } else if (key == "eval_steps") {
      state.eval_steps = get_int(source, key, value);
    } else if (key == "save_steps") {
      state.save_steps = get_int(source, key, value);
    } else if (key == "num_train_epochs") {
      state.num_train_epochs = get_int(source, key, value);
    } else if (key == "train_batch_size") {
      state.train_batch_size = value.is_null() ? 0 : get_int(source, key, value);
    } else if (key == "num_input_tokens_seen") {
      state.num_input_tokens_seen = get_int(source, key, value);
    } else if (key == "total_flos") {
      state.total_flos = get_double(source, key, value);
    } else if (key == "log_history") {
      if (value.is_null()) continue;
      if (!value.is_array()) bad_type(source, key, "a list of objects", value);
      for (const Json& item : value) {
        if (!item.is_object()) bad_type(source, key, "a list of objects", item);
        LogEntry entry;
        // A metric HF logged as text (rare: a custom compute_metrics) has no place in a LogEntry.
        for (const auto& [name, number] : item.items())
          if (number.is_number()) entry[name] = number.get<double>();
        state.log_history.push_back(std::move(entry));
      }
    } else if (key == "best_metric") {
      state.best_metric =
          value.is_null() ? std::nullopt : std::optional<double>(get_double(source, key, value));
    } else if (key == "best_global_step") {
      state.best_global_step =
          value.is_null() ? std::nullopt : std::optional<int64_t>(get_int(source, key, value));
    } else if (key == "best_model_checkpoint") {
      state.best_model_checkpoint =
          value.is_null() ? std::nullopt : std::optional<std::string>(get_string(source, key, value));
    } else if (key == "is_local_process_zero") {
      state.is_local_process_zero = get_bool(source, key, value);
    } else if (key == "is_world_process_zero") {
      state.is_world_process_zero = get_bool(source, key, value);
    } else if (key == "is_hyper_param_search") {
      state.is_hyper_param_search = get_bool(source, key, value);
    } else if (key == "trial_name") {
      state.trial_name =
          value.is_null() ? std::nullopt : std::optional<std::string>(get_string(source, key, value));
    } else if (key == "trial_params") {
      state.trial_params_json = value.dump();
    } else if (key == "stateful_callbacks") {
      state.stateful_callbacks_json = value.is_null() ? "{}" : value.dump();
    } else {
      extra[key] = value;
    }
  }
  state.extra_fields_json = extra.dump();
  return state;
}

void TrainerState::save(const std::string& path) const { write_file_atomically(path, to_json_text()); }

TrainerState TrainerState::load(const std::string& path) {
  const std::string text =
      read_input_file(path, "the trainer state", "pass a checkpoint folder that has trainer_state.json");
  return from_json_text(text, path);
}

}  // namespace berth::train
