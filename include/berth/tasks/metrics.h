// Evaluation metrics for sequence classification and regression, as sklearn defines them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace berth::tasks {

// The label that marks a row to ignore (HF's and torch's cross-entropy ignore_index).
constexpr int64_t kIgnoreLabel = -100;

// logits: (N, C) float, labels: (N,) integer -> {"accuracy", "precision_macro", "recall_macro", "f1_macro",
// "precision", "recall", "f1"}. The prediction is argmax over C (the first maximum on ties, as torch.argmax).
// With C == 2, "precision"/"recall"/"f1" are for the positive class 1 (sklearn's average="binary"); with
// C > 2 they equal the macro values. Macro averages run over all C classes, present or not. A ratio whose
// denominator is 0 is 0 (sklearn's zero_division default, without its warning). Rows labelled -100 are
// ignored; when `confusion` is given it receives the (C, C) counts [true][predicted]. Throws berth::Error on
// mismatched shapes, a label outside [0, C) other than -100, or C < 2 (use regression_metrics).
std::map<std::string, double> classification_metrics(const at::Tensor& logits, const at::Tensor& labels,
                                                     std::vector<std::vector<int64_t>>* confusion = nullptr);

// predictions: (N,) or (N, 1), labels: (N,) or (N, 1) float -> {"mse", "mae", "rmse"}, averaged over N.
std::map<std::string, double> regression_metrics(const at::Tensor& predictions, const at::Tensor& labels);

}  // namespace berth::tasks
