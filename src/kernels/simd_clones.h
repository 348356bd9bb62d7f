// Kernels compiled twice, for AVX2 and for baseline x86-64, with the CPU's best picked when the library
// loads.
#pragma once

// berth builds for baseline x86-64 (no -march), where SSE2 has no 32-bit vector multiply: the counter-based
// dropout hash of the fused kernels then runs element by element. GCC's target_clones adds an AVX2 copy of
// each marked function and an ifunc that picks it on CPUs that have AVX2. The kernels keep their lane-wise
// sums and -ffp-contract is off under -std=c++17, so both copies compute the same bits.
// A lambda inside a marked function is not cloned: mark the function the parallel loop calls instead.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define BERTH_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define BERTH_SIMD_CLONES
#endif
