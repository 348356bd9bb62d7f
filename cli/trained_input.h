// How a fine-tuned model reads text: the truncation its `berth train` run used, so that `berth eval` and
// `berth predict` feed it inputs cut the way it learned them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace berth::cli {

struct TrainedInput {
  size_t max_length = 0;            // 0: unknown (no training_args.json)
  std::optional<size_t> keep_head;  // head+tail truncation (truncation_keep_head); nullopt: end cut off
};

// From model_dir/training_args.json when it exists (the output directory of `berth train` has one); else
// {0, nullopt}. A malformed file is an error naming it.
TrainedInput trained_input(const std::string& model_dir);

}  // namespace berth::cli
