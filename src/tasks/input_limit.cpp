// The longest input a model and its tokenizer take.
#include "berth/tasks/input_limit.h"

#include <algorithm>

namespace berth::tasks {

int64_t model_input_limit(int64_t max_positions, std::optional<size_t> model_max_length) {
  if (!model_max_length) return max_positions;
  return std::min(max_positions, static_cast<int64_t>(*model_max_length));
}

}  // namespace berth::tasks
