// Evaluation metrics: accuracy, precision, recall, F1 (binary and macro) from a confusion matrix; MSE, MAE.
#include "berth/tasks/metrics.h"

#include <torch/torch.h>

#include <cmath>

#include "berth/core/error.h"

namespace berth::tasks {
namespace {

double ratio(int64_t numerator, int64_t denominator) {
  return denominator == 0 ? 0.0 : static_cast<double>(numerator) / static_cast<double>(denominator);
}

double f1_of(double precision, double recall) {
  return precision + recall == 0 ? 0.0 : 2 * precision * recall / (precision + recall);
}

}  // namespace

// logits: (N, C), labels: (N,) -> metrics by name
std::map<std::string, double> classification_metrics(const at::Tensor& logits, const at::Tensor& labels,
                                                     std::vector<std::vector<int64_t>>* confusion) {
  BERTH_CHECK(logits.dim() == 2, "classification_metrics expects logits of shape (N, C), found ",
              logits.sizes(), ". Fix: pass the model's logits for N examples and C classes");
  BERTH_CHECK(labels.dim() == 1 && labels.size(0) == logits.size(0),
              "classification_metrics expects labels of shape (N,) = (", logits.size(0), ",), found ",
              labels.sizes(), ". Fix: pass one label per row of logits");
  BERTH_CHECK(!at::isFloatingType(labels.scalar_type()),
              "classification_metrics expects integer class labels, found ", labels.scalar_type(),
              ". Fix: labels.to(torch::kLong), or regression_metrics for a regression head");
  const int64_t classes = logits.size(1);
  BERTH_CHECK(classes >= 2, "classification_metrics expects at least 2 classes, found C = ", classes,
              ". Fix: use regression_metrics for a single-output (regression) head");

  const at::Tensor predicted = logits.detach().argmax(1).to(torch::kCPU, torch::kLong).contiguous();
  const at::Tensor truth = labels.detach().to(torch::kCPU, torch::kLong).contiguous();
  const int64_t* pred = predicted.data_ptr<int64_t>();
  const int64_t* label = truth.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> counts(classes, std::vector<int64_t>(classes, 0));
  int64_t rows = 0, correct = 0;
  for (int64_t i = 0; i < truth.size(0); ++i) {
    if (label[i] == kIgnoreLabel) continue;
    BERTH_CHECK(label[i] >= 0 && label[i] < classes, "classification_metrics: label ", label[i], " at row ",
                i, " is outside [0, ", classes, ") and is not the ignore label -100. Fix: map labels to 0..",
                classes - 1);
    ++counts[label[i]][pred[i]];
    ++rows;
    correct += label[i] == pred[i];
  }

  std::map<std::string, double> out;
  out["accuracy"] = ratio(correct, rows);
  double precision_sum = 0, recall_sum = 0, f1_sum = 0;
  std::vector<double> precision(classes), recall(classes), f1(classes);
  for (int64_t c = 0; c < classes; ++c) {
    int64_t predicted_c = 0, actual_c = 0;
    for (int64_t k = 0; k < classes; ++k) predicted_c += counts[k][c], actual_c += counts[c][k];
    precision[c] = ratio(counts[c][c], predicted_c);
    recall[c] = ratio(counts[c][c], actual_c);
    f1[c] = f1_of(precision[c], recall[c]);
    precision_sum += precision[c], recall_sum += recall[c], f1_sum += f1[c];
  }
  out["precision_macro"] = precision_sum / static_cast<double>(classes);
  out["recall_macro"] = recall_sum / static_cast<double>(classes);
  out["f1_macro"] = f1_sum / static_cast<double>(classes);
  if (classes == 2) {
    out["precision"] = precision[1];
    out["recall"] = recall[1];
    out["f1"] = f1[1];
  } else {
    out["precision"] = out["precision_macro"];
    out["recall"] = out["recall_macro"];
    out["f1"] = out["f1_macro"];
  }
  if (confusion) *confusion = std::move(counts);
  return out;
}

// predictions: (N,) or (N, 1), labels: (N,) or (N, 1) -> {"mse", "mae", "rmse"}
std::map<std::string, double> regression_metrics(const at::Tensor& predictions, const at::Tensor& labels) {
  const auto flat = [](const at::Tensor& t) {
    return t.dim() == 2 && t.size(1) == 1 ? t.reshape({t.size(0)}) : t;
  };
  const at::Tensor p = flat(predictions.detach()).to(torch::kCPU, torch::kDouble);
  const at::Tensor y = flat(labels.detach()).to(torch::kCPU, torch::kDouble);
  BERTH_CHECK(
      p.dim() == 1 && y.dim() == 1 && p.size(0) == y.size(0),
      "regression_metrics expects predictions and labels of shape (N,) or (N, 1) with the same N, found ",
      predictions.sizes(), " and ", labels.sizes(), ". Fix: pass one prediction per label");
  BERTH_CHECK(p.size(0) > 0,
              "regression_metrics needs at least one example, found none. Fix: evaluate on a "
              "non-empty dataset");
  const at::Tensor diff = p - y;
  const double mse = diff.pow(2).mean().item<double>();
  return {{"mse", mse}, {"mae", diff.abs().mean().item<double>()}, {"rmse", std::sqrt(mse)}};
}

}  // namespace berth::tasks
