// check_token_inputs: input_ids' rank, dtype, length and id range, and the per-token inputs' shapes.
#include "berth/model/input_checks.h"

#include "berth/core/error.h"
#include "berth/placement/inspect.h"

namespace berth {
namespace {

void check_length(const TokenInputLimits& limits, int64_t length) {
  const std::string& m = limits.model;
  BERTH_CHECK(length >= 1, m, ": input_ids is empty (length 0). Fix: give each row at least one token");
  if (!limits.max_positions || length <= *limits.max_positions) return;
  const int64_t most = *limits.max_positions;
  const std::string bound =
      limits.positions_field.empty()
          ? "takes at most " + std::to_string(most) + " tokens"
          : "has " + limits.positions_field + " = " + std::to_string(most) + " positions";
  BERTH_FAIL(m, ": input_ids has length ", length, " but the model ", bound,
             ". Fix: truncate the inputs to at most ", most, " tokens", limits.length_fix);
}

}  // namespace

void check_token_inputs(const TokenInputLimits& limits, const at::Tensor& input_ids,
                        const std::vector<std::pair<std::string, at::Tensor>>& per_token) {
  const std::string& m = limits.model;
  BERTH_CHECK(input_ids.defined(), m, ": input_ids is required (B, T) int64 token ids, found none");
  BERTH_CHECK(input_ids.dim() == 2, m, ": input_ids must be (batch, length), found shape ",
              format_shape(input_ids.sizes()), ". Fix: add a batch dimension, e.g. ids.unsqueeze(0)");
  BERTH_CHECK(input_ids.scalar_type() == at::kLong || input_ids.scalar_type() == at::kInt, m,
              ": input_ids must hold integer token ids (int64), found ", dtype_name(input_ids.scalar_type()));
  check_length(limits, input_ids.size(1));
  for (const auto& [name, tensor] : per_token) {
    if (!tensor.defined()) continue;
    BERTH_CHECK(tensor.sizes() == input_ids.sizes(), m, ": ", name, " has shape ",
                format_shape(tensor.sizes()), " but input_ids has ", format_shape(input_ids.sizes()),
                ". Fix: give one value per token");
  }
  // On an accelerator an id out of range still fails inside the embedding lookup.
  if (!input_ids.device().is_cpu() || input_ids.numel() == 0) return;
  const int64_t low = input_ids.min().item<int64_t>();
  const int64_t high = input_ids.max().item<int64_t>();
  BERTH_CHECK(low >= 0 && high < limits.vocab_size, m, ": input_ids holds ids in [", low, ", ", high,
              "] but the vocabulary has ", limits.vocab_size, " entries (ids 0..", limits.vocab_size - 1,
              "). Fix: use the tokenizer that belongs to this model");
}

}  // namespace berth
