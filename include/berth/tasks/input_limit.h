// The longest input a model and its tokenizer take, which evaluation, prediction and training default to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace berth::tasks {

// `max_positions` (the model's position limit, RoBERTa's padding offset already taken off), capped by the
// tokenizer's model_max_length when it has one (HF's 1e30 "no limit" is read as none).
int64_t model_input_limit(int64_t max_positions, std::optional<size_t> model_max_length);

}  // namespace berth::tasks
