// Attention through torch's fused scaled_dot_product_attention, and the masks it leaves to the eager chain.
#include "berth/kernels/scaled_attention.h"

#include <ATen/ops/amax.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/softmax.h>

namespace berth::kernels {
namespace {

// q: (B, H, T, D), k, v: (B, H, S, D) -> (B, H, T, D), HF's eager chain with the softmax in float32.
at::Tensor eager_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& mask, double scale) {
  at::Tensor scores = at::matmul(q, k.transpose(-1, -2)) * scale;
  if (mask.defined()) scores = scores + mask;
  return at::matmul(at::softmax(scores, -1, at::kFloat).to(v.scalar_type()), v);
}

// mask: (..., T, S) additive -> whether some query has no key left: every entry of its row is at or below
// -1e4 (HF's finfo.min, or the -10000 of older code).
bool masks_a_whole_row(const at::Tensor& mask) { return (at::amax(mask, -1) <= -1e4).any().item<bool>(); }

}  // namespace

at::Tensor scaled_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& mask, double scale) {
  // A per-query mask (causal, sliding window) can mask a query's every key (left padding, windows past the
  // end): eager's softmax spreads such a row evenly, and the fused backward's gradients there differ from it
  // by orders of magnitude (measured on the Llama and ModernBERT goldens). Such a mask takes the chain with
  // or without autograd; the choice rests on the mask alone, so a checkpointed layer's recompute and
  // ZeRO-3's forward take the path the first forward took. Right padding and no padding keep every row.
  const bool per_query_mask = mask.defined() && mask.dim() >= 2 && mask.size(-2) > 1;
  if (per_query_mask && masks_a_whole_row(mask)) return eager_attention(q, k, v, mask, scale);
  // The fused kernels take a float mask only in the query's dtype (bf16 under autocast); HF's
  // finfo(float32).min is within bf16's range, so the padding keys stay at the bottom of the softmax.
  std::optional<at::Tensor> additive;
  if (mask.defined()) additive = mask.scalar_type() == q.scalar_type() ? mask : mask.to(q.scalar_type());
  return at::scaled_dot_product_attention(q, k, v, additive, /*dropout_p=*/0.0, /*is_causal=*/false, scale);
}

}  // namespace berth::kernels
