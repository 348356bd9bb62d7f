// When the model takes berth's fused CPU kernels instead of the plain torch ops they replace.
#pragma once

#include <ATen/core/Tensor.h>

namespace berth::kernels {

// Whether fused kernels are switched on for this process: on unless BERTH_FUSED_KERNELS=0 is in the
// environment (read once), or set_fused_enabled says otherwise. The switch exists for A/B measurements
// and equivalence tests; results differ only in the dropout masks drawn.
bool fused_enabled();
void set_fused_enabled(bool enabled);

// True when `x` can go through the fused kernels: switched on, a CPU float32 tensor. Everything else
// (CUDA, half, double) takes the plain torch ops.
bool use_fused(const at::Tensor& x);

}  // namespace berth::kernels
