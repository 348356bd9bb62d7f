// Dropout with a counter-based mask: element i of a call is kept or dropped by a hash of (seed, i), so
// the mask costs no generator state per element and backward recomputes it instead of storing it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace berth::kernels {

// One 64-bit draw from torch's default CPU generator, under its mutex: the seed of one dropout call.
// torch::manual_seed therefore governs every mask, and restoring that generator's state replays them.
uint64_t draw_dropout_seed();

// The drop threshold for probability p in [0, 1]: element i is dropped when dropout_bits(seed, i) <
// threshold. 32 bits so that the comparison vectorises; p = 1 saturates it, and callers scale kept
// elements by dropout_keep_scale(1) = 0, which drops everything.
inline uint32_t dropout_threshold(double p) {
  const double t = p * 4294967296.0 + 0.5;
  return t >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<uint32_t>(t);
}

// What kept elements are multiplied by: 1 / (1 - p), and 0 for p >= 1.
inline float dropout_keep_scale(double p) { return p >= 1.0 ? 0.0f : static_cast<float>(1.0 / (1.0 - p)); }

// 32 uniform bits for element `index` of the call seeded `seed`: murmur3's fmix32 finaliser, applied
// twice and keyed by both halves of the seed. 32-bit arithmetic only, so loops over it vectorise.
// Indices are taken modulo 2^32: callers send larger tensors to torch's dropout.
inline uint32_t dropout_bits(uint64_t seed, uint32_t index) {
  uint32_t h = index * 0x9E3779B9u + static_cast<uint32_t>(seed);
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  h ^= static_cast<uint32_t>(seed >> 32);
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  h *= 0x846CA68Bu;
  h ^= h >> 16;
  return h;
}

// x: any shape -> same shape; inverted dropout (kept elements scaled by 1/(1-p)). Training on a CPU
// float32 tensor (use_fused) takes the counter-based kernel, whose backward re-derives the mask from the
// seed; anything else, and p = 0 or !training, is torch::dropout.
at::Tensor dropout(const at::Tensor& x, double p, bool training);

}  // namespace berth::kernels
