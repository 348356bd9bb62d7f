// A branch-free float exp that loops vectorise (std::exp does not without -ffast-math): Cephes' expf.
#pragma once

#include <cstdint>
#include <cstring>

// Compiled as the kernel files that call it are (see their pragma): GCC refuses to inline across differing
// optimisation options, and a call per element would stop the loops vectorising.
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")

namespace berth::kernels::detail {

// exp(x) within about 2 ulp for x in [-87.3, 88.3]; 0 below (where expf underflows to denormals or 0),
// +inf-free above (clamped). Range reduction x = n·ln2 + r, |r| <= ln2/2, then a degree-6 polynomial.
inline float fast_exp(float x) {
  const float clamped = x > 88.3f ? 88.3f : (x < -87.3f ? -87.3f : x);
  // Round to nearest by the 1.5·2^23 trick: floorf would stop the loop vectorising on SSE2.
  const float shifted = clamped * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  const float r = (clamped - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return x < -87.3f ? 0.0f : p * scale;
}

}  // namespace berth::kernels::detail

#pragma GCC pop_options
