// TrainerState: where a training run stands, saved as HF's trainer_state.json in each checkpoint.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace berth::train {

// One entry of log_history: {"loss": 0.69, "learning_rate": 5e-05, "grad_norm": 1.2, "epoch": 0.5, "step":
// 10} or {"eval_loss": ..., "eval_accuracy": ..., "step": ...}; every value a number, as HF writes them.
using LogEntry = std::map<std::string, double>;

// HF's TrainerState dataclass, field for field (transformers 4.4x), with its JSON names.
struct TrainerState {
  double epoch = 0;  // fractional: 1.5 is halfway through the second epoch
  int64_t global_step = 0;
  int64_t max_steps = 0;
  int64_t logging_steps = 500;  // resolved step counts (ratios already applied)
  int64_t eval_steps = 500;
  int64_t save_steps = 500;
  int64_t num_train_epochs = 0;
  int64_t train_batch_size = 0;
  int64_t num_input_tokens_seen = 0;
  double total_flos = 0;  // HF writes it as a float (1.2e+15 overflows nothing, but is not always whole)
  std::vector<LogEntry> log_history;
  std::optional<double> best_metric;
  std::optional<int64_t> best_global_step;  // newer HF; written as null when unknown
  std::optional<std::string> best_model_checkpoint;
  bool is_local_process_zero = true;
  bool is_world_process_zero = true;
  bool is_hyper_param_search = false;
  std::optional<std::string> trial_name;
  std::string trial_params_json = "null";      // HF's trial_params: a JSON object or null, kept as JSON text
  std::string stateful_callbacks_json = "{}";  // HF's stateful_callbacks, kept as JSON text
  // Top-level keys this berth does not know (a newer HF's), kept as one JSON object's text and written back.
  std::string extra_fields_json = "{}";

  // HF's layout: all fields, keys sorted, 2-space indent.
  std::string to_json_text() const;
  // Reads HF's or berth's trainer_state.json; unknown keys are kept in extra_fields_json, non-numeric values
  // in log_history entries are skipped. Missing keys keep their defaults. Type errors name the key and
  // `source`.
  static TrainerState from_json_text(const std::string& text,
                                     const std::string& source = "trainer_state.json");
  void save(const std::string& path) const;  // atomically
  static TrainerState load(const std::string& path);
};

}  // namespace berth::train
