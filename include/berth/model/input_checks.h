// check_token_inputs: the one check of a model's input_ids and its per-token inputs, so every family
// explains a wrong shape, dtype, length or id in the same words.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace berth {

// What a model takes, for the messages.
struct TokenInputLimits {
  std::string model;  // each message starts with it: "BertModel", "GPT2LMHeadModel"
  int64_t vocab_size = 0;
  std::optional<int64_t> max_positions;  // unset: no bound (rotary positions have no table to run past)
  // config.json's name for the bound, named in the message when the bound is exactly that field
  // ("max_position_embeddings", "n_positions"); empty: "takes at most N tokens".
  std::string positions_field;
  std::string length_fix;  // added to the too-long message's fix: " (or use a shorter --block-size)"
};

// input_ids: (B, T) integer ids with 1 <= T <= max_positions and (on the CPU, where it costs no device
// synchronisation) every id in 0..vocab_size-1; each defined tensor of `per_token` (name, tensor) shaped as
// input_ids. Throws berth::Error naming the model, what was found and the fix.
void check_token_inputs(const TokenInputLimits& limits, const at::Tensor& input_ids,
                        const std::vector<std::pair<std::string, at::Tensor>>& per_token);

}  // namespace berth
