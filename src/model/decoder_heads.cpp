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

}  // namespace berth
