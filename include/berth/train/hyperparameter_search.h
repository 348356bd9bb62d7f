// Hyperparameter search spaces over training arguments, and grid or seeded random trials from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace berth::train {

// One searched training argument.
struct SearchDimension {
  enum Kind { Choice, Uniform, LogUniform, IntRange };
  std::string name;  // a training argument, e.g. "learning_rate"
  Kind kind = Choice;
  std::vector<std::string> choices;  // Choice: the values as set_training_argument reads them
  double low = 0, high = 0;          // Uniform, LogUniform: [low, high); IntRange: low..high inclusive
};

struct SearchSpace {
  std::vector<SearchDimension> dims;  // in the JSON object's key order (sorted)

  // {"learning_rate": {"type": "log_uniform", "low": 1e-5, "high": 1e-3},
  //  "per_device_train_batch_size": [16, 32], "num_train_epochs": {"type": "int", "low": 2, "high": 4}}
  // A list is a choice (also {"type": "choice", "values": [...]}); types: choice, uniform, log_uniform, int.
  // Names must be training arguments (unknown ones throw with the closest name); bounds must be ordered,
  // log_uniform's positive, int's whole.
  static SearchSpace from_json_text(const std::string& text, const std::string& source = "search space");
};

enum class SearchMethod { Grid, Random };
// "grid" or "random"; anything else throws berth::Error listing both.
SearchMethod parse_search_method(std::string_view text);

// Trials, each a map name -> value text ready for set_training_argument.
// Grid: the cartesian product of every dimension's values (Choice values, IntRange's whole numbers; a
// continuous dimension throws, naming it), in order with the last dimension fastest, the first n_trials
// (0: all). Random: n_trials (>= 1) independent draws from SplitMix64(seed): uniform, log-uniform (uniform in
// log space), uniform integers, uniform choices.
std::vector<std::map<std::string, std::string>> sample_trials(const SearchSpace& space, SearchMethod method,
                                                              size_t n_trials, uint64_t seed);

enum class Direction { Maximize, Minimize };
// "maximize"/"max" or "minimize"/"min"; anything else throws berth::Error.
Direction parse_direction(std::string_view text);

}  // namespace berth::train
