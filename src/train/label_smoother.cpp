// HF's LabelSmoother, step for step (trainer_pt_utils.py), and which task models the Trainer applies it to.
#include "berth/train/label_smoother.h"

#include <torch/torch.h>

#include "berth/core/error.h"
#include "berth/tasks/task_recipe.h"

namespace berth::train {

at::Tensor label_smoothed_loss(const at::Tensor& logits_in, const at::Tensor& labels_in, double epsilon,
                               bool shift_labels) {
  at::Tensor logits = logits_in;
  at::Tensor labels = labels_in;
  if (shift_labels) {
    logits = logits.slice(-2, 0, logits.size(-2) - 1);
    labels = labels.slice(-1, 1);
  }
  BERTH_BUG(labels.dim() == logits.dim() - 1, "label_smoothed_loss: labels ", labels.sizes(),
            " do not index logits ", logits.sizes());
  const at::Tensor log_probs = -torch::log_softmax(logits, -1);
  const at::Tensor index = labels.unsqueeze(-1);
  const at::Tensor padding = index.eq(-100);
  // -100 cannot be gathered; the padding mask zeroes those positions anyway.
  const at::Tensor nll = log_probs.gather(-1, index.clamp_min(0)).masked_fill(padding, 0.0);
  // HF sums in float32 whatever the logits' dtype.
  const at::Tensor smoothed = log_probs.sum(-1, /*keepdim=*/true, at::kFloat).masked_fill(padding, 0.0);
  const at::Tensor active = padding.numel() - padding.to(at::kLong).sum();
  const at::Tensor nll_mean = nll.sum() / active;
  const at::Tensor smoothed_mean = smoothed.sum() / (active * log_probs.size(-1));
  return ((1 - epsilon) * nll_mean + epsilon * smoothed_mean).to(at::kFloat);
}

LabelSmoothing label_smoothing_for(const TaskModelInfo& info) {
  return tasks::task_recipe(info.task).label_smoothing(info);
}

}  // namespace berth::train
