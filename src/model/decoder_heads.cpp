// Decoder task heads: HF's causal LM loss, last-non-pad pooling and sequence classification loss.
#include "berth/model/decoder_heads.h"

#include "berth/core/error.h"
#include "berth/model/problem_type.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/inspect.h"

#include <torch/torch.h>

namespace berth {
namespace {

namespace F = torch::nn::functional;

std::string decoder_shape_of(const at::Tensor& t) { return format_shape(t.sizes()); }

}  // namespace

at::Tensor causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels) {
  check_tensor_on(labels, "labels", logits.device());
  BERTH_CHECK(logits.dim() == 3, "causal LM loss: logits must be (batch, length, vocab), found ",
              decoder_shape_of(logits));
  BERTH_CHECK(labels.dim() == 2 && labels.size(0) == logits.size(0) && labels.size(1) == logits.size(1),
              "causal LM labels must be (batch, length) like input_ids ",
              decoder_shape_of(logits.slice(2, 0, 1)), ", found ", decoder_shape_of(labels),
              ". Fix: pass labels = input_ids (padding as -100); the model shifts them itself");
  BERTH_CHECK(labels.scalar_type() == at::kLong || labels.scalar_type() == at::kInt,
              "causal LM labels must be int64 token ids, found ", dtype_name(labels.scalar_type()));
  const int64_t vocab = logits.size(2);
  // As HF: labels padded with one -100 on the right and shifted left, so position t predicts token t + 1.
  at::Tensor shifted = F::pad(labels.to(at::kLong), F::PadFuncOptions({0, 1}).value(-100)).slice(1, 1);
  return F::cross_entropy(logits.to(at::kFloat).reshape({-1, vocab}), shifted.reshape({-1}),
                          F::CrossEntropyFuncOptions().ignore_index(-100));
}

at::Tensor last_non_pad_positions(const at::Tensor& input_ids, std::optional<int64_t> pad_token_id,
                                  const std::string& architecture) {
  const int64_t batch = input_ids.size(0);
  const int64_t length = input_ids.size(1);
  if (!pad_token_id) {
    BERTH_CHECK(
        batch == 1, architecture,
        ": config.json has no pad_token_id, so the model cannot find each "
        "row's last token in a batch of ",
        batch,
        " (HF: \"Cannot handle batch sizes > 1 if no padding token is defined\"). Fix: set pad_token_id "
        "in config.json to the tokenizer's padding id");
    return torch::full({1}, length - 1, input_ids.options().dtype(at::kLong));
  }
  // HF's argmax over position * (id != pad): the rightmost non-pad token, for left and right padding alike.
  at::Tensor non_pad = (input_ids != *pad_token_id).to(at::kInt);
  at::Tensor positions = torch::arange(length, input_ids.options().dtype(at::kInt));
  return (positions * non_pad).argmax(-1);
}

at::Tensor sequence_classification_loss(const at::Tensor& pooled_logits, const at::Tensor& labels,
                                        int64_t num_labels, std::optional<std::string>& problem_type) {
  check_tensor_on(labels, "labels", pooled_logits.device());
  const bool integer_labels = labels.scalar_type() == at::kLong || labels.scalar_type() == at::kInt;
  if (!problem_type) {
    problem_type = num_labels == 1  ? kRegression
                   : integer_labels ? kSingleLabelClassification
                                    : kMultiLabelClassification;
  }
  const int64_t batch = pooled_logits.size(0);
  if (*problem_type == kRegression) {
    if (num_labels == 1) {
      BERTH_CHECK(labels.numel() == batch, "regression labels must hold one value per example (", batch,
                  "), found shape ", decoder_shape_of(labels));
      return F::mse_loss(pooled_logits.squeeze(), labels.squeeze().to(pooled_logits.scalar_type()));
    }
    BERTH_CHECK(labels.sizes() == pooled_logits.sizes(), "regression labels must match the logits' shape ",
                decoder_shape_of(pooled_logits), ", found ", decoder_shape_of(labels));
    return F::mse_loss(pooled_logits, labels.to(pooled_logits.scalar_type()));
  }
  if (*problem_type == kSingleLabelClassification) {
    BERTH_CHECK(integer_labels, "single_label_classification needs integer class ids as labels, found ",
                dtype_name(labels.scalar_type()), ". Fix: pass int64 labels in 0..", num_labels - 1,
                ", or set problem_type to multi_label_classification for 0/1 float targets");
    BERTH_CHECK(labels.numel() == batch,
                "single_label_classification labels must hold one class id per example (", batch,
                "), found shape ", decoder_shape_of(labels));
    return F::cross_entropy(pooled_logits.view({-1, num_labels}), labels.reshape({-1}).to(at::kLong));
  }
  BERTH_CHECK(*problem_type == kMultiLabelClassification, "problem_type is \"", *problem_type,
              "\"; HF knows regression, single_label_classification and multi_label_classification. Fix: set "
              "one of those in config.json");
  BERTH_CHECK(labels.sizes() == pooled_logits.sizes(),
              "multi_label_classification labels must match the logits' shape ",
              decoder_shape_of(pooled_logits), " (one 0/1 target per label), found ",
              decoder_shape_of(labels));
  return F::binary_cross_entropy_with_logits(pooled_logits, labels.to(pooled_logits.scalar_type()));
}

}  // namespace berth
