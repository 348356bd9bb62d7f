// sequence_classification_loss: MSE, cross-entropy or BCE-with-logits, as HF's heads choose.
#include "berth/model/sequence_classification_loss.h"

#include "berth/core/error.h"
#include "berth/model/problem_type.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/inspect.h"

#include <torch/torch.h>

namespace berth {

at::Tensor sequence_classification_loss(const at::Tensor& logits, const at::Tensor& labels,
                                        std::optional<std::string>& problem_type) {
  namespace F = torch::nn::functional;
  check_tensor_on(labels, "labels", logits.device());
  const int64_t num_labels = logits.size(-1);
  const int64_t batch = logits.size(0);
  const bool integer_labels = labels.scalar_type() == at::kLong || labels.scalar_type() == at::kInt;
  if (!problem_type) {
    problem_type = num_labels == 1  ? kRegression
                   : integer_labels ? kSingleLabelClassification
                                    : kMultiLabelClassification;
  }
  const std::string& problem = *problem_type;
  if (problem == kRegression) {
    if (num_labels == 1) {
      BERTH_CHECK(labels.numel() == batch, "regression labels must hold one value per example (", batch,
                  "), found shape ", format_shape(labels.sizes()));
      return F::mse_loss(logits.squeeze(), labels.squeeze().to(logits.scalar_type()));
    }
    BERTH_CHECK(labels.numel() == logits.numel(), "regression labels must match the logits' shape ",
                format_shape(logits.sizes()), " (one target per output), found ",
                format_shape(labels.sizes()));
    return F::mse_loss(logits, labels.view(logits.sizes()).to(logits.scalar_type()));
  }
  if (problem == kSingleLabelClassification) {
    BERTH_CHECK(integer_labels, "single_label_classification needs integer class ids as labels, found ",
                dtype_name(labels.scalar_type()), ". Fix: pass int64 labels in 0..", num_labels - 1,
                ", or set problem_type to multi_label_classification for 0/1 float targets");
    BERTH_CHECK(labels.numel() == batch,
                "single_label_classification labels must hold one class id per example (", batch,
                "), found shape ", format_shape(labels.sizes()));
    // (B, num_labels) against (B,): -100 marks an example left out of the mean, as in HF.
    return F::cross_entropy(logits.view({-1, num_labels}), labels.reshape({-1}).to(at::kLong));
  }
  BERTH_CHECK(problem == kMultiLabelClassification, "problem_type is \"", problem,
              "\"; HF knows regression, single_label_classification and multi_label_classification. Fix: set "
              "one of those in config.json");
  BERTH_CHECK(
      labels.sizes() == logits.sizes(), "multi_label_classification labels must match the logits' shape ",
      format_shape(logits.sizes()), " (one 0/1 target per label), found ", format_shape(labels.sizes()),
      ". Fix: pass multi-hot float labels, or int64 class ids with problem_type single_label_classification");
  return F::binary_cross_entropy_with_logits(logits, labels.to(logits.scalar_type()));
}

}  // namespace berth
