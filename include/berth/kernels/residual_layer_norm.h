// The block after attention and after the feed-forward layer in one pass: bias, dropout, residual add and
// LayerNorm fused.
#pragma once

#include <ATen/core/Tensor.h>

namespace berth::kernels {

// hidden: (..., C), x·Wᵀ of a Linear without its bias; bias, gamma, beta: (C); residual: (..., C) ->
// (..., C): layer_norm(dropout(hidden + bias, p) + residual, gamma, beta, eps), as HF's BertSelfOutput /
// BertOutput compute it. Training on CPU float32 takes the fused kernel (the dropout mask recomputed from
// its seed in backward, see dropout.h); anything else runs the plain torch ops.
at::Tensor residual_layer_norm(const at::Tensor& hidden, const at::Tensor& bias, const at::Tensor& residual,
                               const at::Tensor& gamma, const at::Tensor& beta, double eps, double p,
                               bool training);

}  // namespace berth::kernels
