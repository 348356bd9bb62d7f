// berth's fused CPU AdamW kernel: one pass over param/grad/m/v, AVX-512/AVX2/scalar by runtime dispatch.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace berth::optim {

// One step's scalars of torch.optim.AdamW's update, rounded to float as torch's float32 kernels use them.
// Same for every parameter of a group at one step: compute once with adamw_scalars, reuse for every shard.
struct AdamWStepScalars {
  float decay = 1;  // 1 - lr * weight_decay (decoupled weight decay)
  float beta1 = 0.9F;
  float one_minus_beta1 = 0.1F;
  // exp_avg.lerp_(grad, 1 - beta1) as ATen computes it: fma(lerp_coeff, g - m, m) for a weight below 0.5,
  // else fma(weight - 1, g - m, g) (lerp_from_grad).
  float lerp_coeff = 0.1F;
  bool lerp_from_grad = false;
  float beta2 = 0.999F;
  float one_minus_beta2 = 0.001F;
  float bias_correction2_sqrt = 1;  // sqrt(1 - beta2^step)
  float eps = 1e-8F;
  float neg_step_size = 0;  // -lr / (1 - beta1^step)
};

// The scalars of step `step` (1-based: the first update is step 1), computed in double as torch does, then
// rounded to float. Throws berth::Error for step < 1, lr < 0, eps < 0, weight_decay < 0 or a beta outside [0,
// 1).
AdamWStepScalars adamw_scalars(double lr, double beta1, double beta2, double eps, double weight_decay,
                               int64_t step);

// p, g, m, v: (n,) float32, non-overlapping (g may not alias p/m/v) -> p, m, v updated in place, in one pass,
// split over at::parallel_for (results do not depend on the thread count). n == 0 is a no-op.
void adamw_step_flat(float* p, const float* g, float* m, float* v, int64_t n, const AdamWStepScalars& s);

// The same on tensors: p, g, m, v contiguous float32 CPU tensors with equal numel (shapes may differ, e.g. a
// flat shard's views). Throws berth::Error otherwise. Bumps p's, m's and v's version counters as in-place
// torch ops would.
void adamw_step(at::Tensor& p, const at::Tensor& g, at::Tensor& m, at::Tensor& v, const AdamWStepScalars& s);

// What the runtime dispatch picked: "avx512", "avx2" or "scalar" (env BERTH_ADAMW_ISA forces one; decided
// once per process, on first use).
std::string adamw_kernel_isa();

// ISAs this build and this CPU can run, best first (always ends with "scalar"). For tests and benchmarks.
std::vector<std::string> adamw_kernel_available_isas();

// Testing/benchmark hook: the same update with a named ISA ("avx512", "avx2", "scalar"), ignoring the
// dispatch. Throws berth::Error if the name is unknown or the CPU/build lacks it.
void adamw_step_flat_isa(const std::string& isa, float* p, const float* g, float* m, float* v, int64_t n,
                         const AdamWStepScalars& s);

}  // namespace berth::optim
