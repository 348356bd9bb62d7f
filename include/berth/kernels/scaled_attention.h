// Attention without dropout in one call: torch's scaled_dot_product_attention, whose CPU flash kernel (fp32
// and bf16) tiles the softmax and never writes the (B, H, T, S) probabilities, 3-4x the matmul-softmax-matmul
// chain at 128-512 tokens (bench/README.md). Dropout on the probabilities stays with the caller's own path.
#pragma once

#include <ATen/core/Tensor.h>

namespace berth::kernels {

// q: (B, H, T, D), k, v: (B, H, S, D), mask: additive (0 or a large negative), broadcastable to (B, H, T, S),
// or undefined -> (B, H, T, D): softmax(q·kᵀ · scale + mask, -1) · v, differentiable. A per-query mask
// ((B, 1, T, S): causal, sliding window) that leaves some query no key (left padding) takes the eager chain.
at::Tensor scaled_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& mask, double scale);

}  // namespace berth::kernels
