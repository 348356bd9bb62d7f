// Attention's scores -> probabilities in one pass: scale, additive mask, softmax and dropout fused.
#pragma once

#include <ATen/core/Tensor.h>

namespace berth::kernels {

// scores: (B, H, T, S) raw q·kᵀ, mask: additive, broadcastable to (B, 1, 1, S) (HF's extended mask) ->
// (B, H, T, S): dropout(softmax(scores / divisor + mask, -1), p), computed as HF does in that order.
// Training on CPU float32 with a (B, 1, 1, S) mask takes the fused kernel (one pass forward, one backward,
// the dropout mask recomputed from its seed, see dropout.h); anything else runs the plain torch ops.
at::Tensor attention_softmax(const at::Tensor& scores, const at::Tensor& mask, double divisor, double p,
                             bool training);

}  // namespace berth::kernels
