// The decoder families' task heads as HF computes them: the causal LM loss with labels shifted inside and the
// last-non-pad-token pooling of *ForSequenceClassification (its loss: sequence_classification_loss.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>

namespace berth {

// HF's ForCausalLMLoss: logits (B, T, V) of any dtype, labels (B, T) int64 with -100 for ignored tokens ->
// scalar float32: cross entropy of logits[:, :-1] (upcast to float32) against labels[:, 1:], averaged over
// the tokens that are not ignored.
at::Tensor causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels);

// HF's choice of each row's summary token: input_ids (B, T) -> (B,) int64, the rightmost position whose id is
// not pad_token_id (0 for a row of padding only). Without a pad_token_id every row uses its last position,
// which HF allows for one row only: a batch of more throws naming `architecture` and pad_token_id.
at::Tensor last_non_pad_positions(const at::Tensor& input_ids, std::optional<int64_t> pad_token_id,
                                  const std::string& architecture);

}  // namespace berth
