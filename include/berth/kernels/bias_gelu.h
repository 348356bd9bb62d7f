// The feed-forward activation in one pass: bias add and the exact (erf) GELU fused, with its backward.
#pragma once

#include <ATen/core/Tensor.h>

namespace berth::kernels {

// hidden: (..., N), x·Wᵀ of a Linear without its bias; bias: (N) -> (..., N): gelu(hidden + bias), the exact
// erf GELU of HF's "gelu". Training on CPU float32 takes the fused kernel (erfc by a Chebyshev fit,
// relative error below 2e-7, instead of libm's); anything else runs the plain torch ops.
// Not used by BertModel: bench/kernels_bench measured it 0.14-0.44x torch's bias add + vectorised gelu
// (forward + backward, bert-mini's (8, 128, 1024)), the loops here not vectorising as the others do.
at::Tensor bias_gelu(const at::Tensor& hidden, const at::Tensor& bias, bool training);

}  // namespace berth::kernels
