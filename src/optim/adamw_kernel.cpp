// The fused AdamW loop: one pass over p, g, m, v, vectorised by the compiler, parallel over chunks.
// Built with -fno-math-errno (src/CMakeLists.txt): sqrtf that may set errno keeps GCC from vectorising.
#include "optim/adamw_kernel.h"

#include <ATen/Parallel.h>

#include <cmath>

namespace berth::optim::detail {
namespace {

// Each line is one torch op of torch.optim.AdamW (single-tensor path), in its evaluation order, so the
// float results match torch's to the last bit or two (torch's vectorised kernels may contract to FMA).
void adamw_chunk(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                 int64_t n, const AdamWScalars s) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] * s.beta1 + s.one_minus_beta1 * gi;  // exp_avg.mul_(b1).add_(g, 1-b1)
    const float vi =
        v[i] * s.beta2 + s.one_minus_beta2 * gi * gi;  // exp_avg_sq.mul_(b2).addcmul_(g, g, 1-b2)
    const float denom = std::sqrt(vi) / s.bias_correction2_sqrt + s.eps;  // (v.sqrt() / sqrt(bc2)).add_(eps)
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * s.decay + s.neg_step_size * mi / denom;  // p.mul_(1-lr*wd); p.addcdiv_(m, denom, -step)
  }
}

// Big enough that a chunk's thread start-up is noise against 16 B read + 12 B written per element.
constexpr int64_t kGrain = 1 << 15;

}  // namespace

void adamw_fused_float(float* p, const float* g, float* m, float* v, int64_t n, const AdamWScalars& s) {
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    adamw_chunk(p + begin, g + begin, m + begin, v + begin, end - begin, s);
  });
}

}  // namespace berth::optim::detail
