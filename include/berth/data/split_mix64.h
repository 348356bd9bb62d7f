// SplitMix64: a tiny seeded random generator whose output is fixed by its definition, so shuffles and splits
// are the same on every platform and standard library (std::shuffle and std::uniform_int_distribution are
// not).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace berth::data {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  // Steele, Lea and Flood's SplitMix64 step (the generator java.util.SplittableRandom uses).
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound), bound > 0, without modulo bias: draws that fall in the incomplete last block of
  // 2^64 are redrawn (fewer than one draw in two on average, usually none).
  uint64_t below(uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t value = next();
    while (value >= limit) value = next();
    return value % bound;
  }

 private:
  uint64_t state_;
};

// Fisher-Yates with SplitMix64: the same permutation for the same seed everywhere.
template <typename T>
void shuffle(std::vector<T>& items, SplitMix64& rng) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng.below(i)]);
}

}  // namespace berth::data
