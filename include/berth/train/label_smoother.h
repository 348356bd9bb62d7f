// HF's LabelSmoother (transformers/trainer_pt_utils.py): the Trainer's loss under label_smoothing_factor.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "berth/model/task_model.h"
#include "berth/tasks/task_traits.h"

namespace berth::train {

// (1 - epsilon) x the mean negative log-likelihood of the labels + epsilon x the mean over classes of the
// negative log-probabilities, over the positions whose label is not -100 (HF's ignore index). With
// `shift_labels` (causal LMs) position t predicts label t + 1, as HF's Trainer shifts them.
// logits: (..., C) float, labels: (...) int64 -> () float32
at::Tensor label_smoothed_loss(const at::Tensor& logits, const at::Tensor& labels, double epsilon,
                               bool shift_labels);

// How HF's Trainer treats label_smoothing_factor for a model of this kind: its task recipe's answer.
using tasks::LabelSmoothing;  // berth/tasks/task_traits.h
// Throws berth::Error for regression (one float label, nothing to smooth; HF's LabelSmoother fails there).
LabelSmoothing label_smoothing_for(const TaskModelInfo& info);

}  // namespace berth::train
