// sequence_classification_loss: HF's *ForSequenceClassification loss for every family, by config.json's
// problem_type.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>

namespace berth {

// logits (B, num_labels); labels (B,) int64 class ids (-100 ignored) for single-label classification, (B,)
// or (B, num_labels) floats for regression, (B, num_labels) 0/1 floats for multi-label -> scalar. An unset
// problem_type is chosen as HF chooses it (regression for one label, single-label for integer labels, else
// multi-label) and recorded in `problem_type`, as HF records it in the config.
at::Tensor sequence_classification_loss(const at::Tensor& logits, const at::Tensor& labels,
                                        std::optional<std::string>& problem_type);

}  // namespace berth
