// The AdamW loop in AVX2 intrinsics, 2 x 8 floats per iteration (called only where the CPU has AVX2).
#include "optim/adamw_kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace berth::optim::detail {
namespace {

struct Avx2Scalars {
  __m256 decay, lerp_coeff, beta2, one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size;
  bool lerp_from_grad;
};

// One vector of 8 elements, the same operations in the same order as adamw_chunk_scalar. FMA exactly where
// torch fuses (lerp_, addcmul_), true sqrt and division (not rsqrt/rcp approximations): the results
// must match torch's to the ulp.
__attribute__((target("avx2,fma"), always_inline)) inline void update8(float* p, const float* g, float* m,
                                                                       float* v, const Avx2Scalars& s) {
  const __m256 gi = _mm256_loadu_ps(g);
  const __m256 mo = _mm256_loadu_ps(m);
  const __m256 mi = _mm256_fmadd_ps(s.lerp_coeff, _mm256_sub_ps(gi, mo), s.lerp_from_grad ? gi : mo);
  const __m256 vi =
      _mm256_fmadd_ps(_mm256_mul_ps(s.one_minus_beta2, gi), gi, _mm256_mul_ps(_mm256_loadu_ps(v), s.beta2));
  const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), s.bias_correction2_sqrt), s.eps);
  const __m256 pi = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(p), s.decay),
                                  _mm256_div_ps(_mm256_mul_ps(s.neg_step_size, mi), denom));
  _mm256_storeu_ps(m, mi);
  _mm256_storeu_ps(v, vi);
  _mm256_storeu_ps(p, pi);
}

}  // namespace

__attribute__((target("avx2,fma"))) void adamw_chunk_avx2(float* p, const float* g, float* m, float* v,
                                                          int64_t n, const AdamWStepScalars& s) {
  const Avx2Scalars vs{_mm256_set1_ps(s.decay),
                       _mm256_set1_ps(s.lerp_coeff),
                       _mm256_set1_ps(s.beta2),
                       _mm256_set1_ps(s.one_minus_beta2),
                       _mm256_set1_ps(s.bias_correction2_sqrt),
                       _mm256_set1_ps(s.eps),
                       _mm256_set1_ps(s.neg_step_size),
                       s.lerp_from_grad};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    update8(p + i, g + i, m + i, v + i, vs);
    update8(p + i + 8, g + i + 8, m + i + 8, v + i + 8, vs);
  }
  for (; i + 8 <= n; i += 8) update8(p + i, g + i, m + i, v + i, vs);
  if (i < n) adamw_chunk_scalar(p + i, g + i, m + i, v + i, n - i, s);
}

}  // namespace berth::optim::detail
#endif
