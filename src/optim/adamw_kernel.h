// The per-ISA AdamW loops behind berth/optim/adamw_kernel.h (private to src/optim).
#pragma once

#include "berth/optim/adamw_kernel.h"

#include <cstdint>

namespace berth::optim::detail {

// p, g, m, v: (n,) float32 -> p, m, v updated in place by one thread. Every variant does the same float
// operations in the same order, fusing a multiply-add exactly where torch does and nowhere else (the files
// are built with -ffp-contract=off), so all ISAs give bit-identical results, equal to torch.optim.AdamW's.
void adamw_chunk_scalar(float* p, const float* g, float* m, float* v, int64_t n, const AdamWStepScalars& s);
#if defined(__x86_64__)
void adamw_chunk_avx2(float* p, const float* g, float* m, float* v, int64_t n, const AdamWStepScalars& s);
void adamw_chunk_avx512(float* p, const float* g, float* m, float* v, int64_t n, const AdamWStepScalars& s);
#endif

}  // namespace berth::optim::detail
