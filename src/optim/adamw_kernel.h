// The fused AdamW loop over contiguous float32 arrays (private to src/optim).
#pragma once

#include <cstdint>

namespace berth::optim::detail {

// Per-step scalars of one parameter's AdamW update, as torch rounds them to float.
struct AdamWScalars {
  float decay;  // 1 - lr * weight_decay
  float beta1;
  float one_minus_beta1;
  float beta2;
  float one_minus_beta2;
  float bias_correction2_sqrt;
  float eps;
  float neg_step_size;  // -lr / bias_correction1
};

// p, g, m, v: (n,) float32 -> p, m, v updated in place, in one pass, split over at::parallel_for.
void adamw_fused_float(float* p, const float* g, float* m, float* v, int64_t n, const AdamWScalars& s);

}  // namespace berth::optim::detail
