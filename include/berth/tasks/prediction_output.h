// What an evaluation gives back: a model's predictions over a dataset and their metrics, and what a task's
// own metrics (compute_metrics) are handed. The Trainer fills them; the task recipes read them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "berth/data/tokenized_dataset.h"

namespace berth::tasks {

// What evaluate() hands compute_metrics: everything on the CPU, in dataset order.
struct EvalPrediction {
  at::Tensor logits;     // (N, num_labels) float; question answering: (N, T, 2) start/end logits
  at::Tensor label_ids;  // (N,) int64, (N, L) float or (N, 2) int64 positions; undefined for unlabelled data
  // The rows evaluated, so that a metric over more than the logits (question answering's answer texts) can
  // find what they came from.
  const data::TokenizedDataset* dataset = nullptr;
};
// Extra metrics by name (without prefix); the Trainer adds "eval_" (or the split's prefix).
using ComputeMetrics = std::function<std::map<std::string, double>(const EvalPrediction&)>;

struct PredictionOutput {
  at::Tensor logits;         // (N, num_labels) float, CPU, dataset order; question answering (N, T, 2)
  at::Tensor probabilities;  // softmax (single-label), sigmoid (multi-label), undefined for regression
  at::Tensor predictions;    // (N,) argmax class ids (single-label); undefined otherwise
  at::Tensor label_ids;      // the dataset's labels, when it has them
  std::map<std::string, double> metrics;        // prefixed ("test_accuracy"), when labelled
  std::vector<std::vector<int64_t>> confusion;  // [true][predicted], single-label only
};

}  // namespace berth::tasks
