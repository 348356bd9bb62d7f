// The AdamW loop in AVX-512F intrinsics, 2 x 16 floats per iteration (called only where the CPU has
// AVX-512F).
#include "optim/adamw_kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>

// GCC 12's _mm512_sqrt_ps passes _mm512_undefined_ps() as the (unused, all-lanes-masked) source: a known
// false -Wmaybe-uninitialized once inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace berth::optim::detail {
namespace {

struct Avx512Scalars {
  __m512 decay, lerp_coeff, beta2, one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size;
  bool lerp_from_grad;
};

// One vector of 16 elements, the same operations in the same order as adamw_chunk_scalar. FMA exactly where
// torch fuses (lerp_, addcmul_), true sqrt and division (not rsqrt/rcp approximations): the results
// must match torch's to the ulp.
__attribute__((target("avx512f"), always_inline)) inline void update16(float* p, const float* g, float* m,
                                                                       float* v, const Avx512Scalars& s) {
  const __m512 gi = _mm512_loadu_ps(g);
  const __m512 mo = _mm512_loadu_ps(m);
  const __m512 mi = _mm512_fmadd_ps(s.lerp_coeff, _mm512_sub_ps(gi, mo), s.lerp_from_grad ? gi : mo);
  const __m512 vi =
      _mm512_fmadd_ps(_mm512_mul_ps(s.one_minus_beta2, gi), gi, _mm512_mul_ps(_mm512_loadu_ps(v), s.beta2));
  const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), s.bias_correction2_sqrt), s.eps);
  const __m512 pi = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(p), s.decay),
                                  _mm512_div_ps(_mm512_mul_ps(s.neg_step_size, mi), denom));
  _mm512_storeu_ps(m, mi);
  _mm512_storeu_ps(v, vi);
  _mm512_storeu_ps(p, pi);
}

}  // namespace

__attribute__((target("avx512f"))) void adamw_chunk_avx512(float* p, const float* g, float* m, float* v,
                                                           int64_t n, const AdamWStepScalars& s) {
  const Avx512Scalars vs{_mm512_set1_ps(s.decay),
                         _mm512_set1_ps(s.lerp_coeff),
                         _mm512_set1_ps(s.beta2),
                         _mm512_set1_ps(s.one_minus_beta2),
                         _mm512_set1_ps(s.bias_correction2_sqrt),
                         _mm512_set1_ps(s.eps),
                         _mm512_set1_ps(s.neg_step_size),
                         s.lerp_from_grad};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    update16(p + i, g + i, m + i, v + i, vs);
    update16(p + i + 16, g + i + 16, m + i + 16, v + i + 16, vs);
  }
  for (; i + 16 <= n; i += 16) update16(p + i, g + i, m + i, v + i, vs);
  if (i < n) adamw_chunk_scalar(p + i, g + i, m + i, v + i, n - i, s);
}

}  // namespace berth::optim::detail

#pragma GCC diagnostic pop
#endif
