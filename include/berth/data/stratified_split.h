// Deterministic train/validation/test split of a labelled dataset, stratified by label.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace berth::data {

struct SplitFractions {
  double train = 0.8;
  double validation = 0.1;
  double test = 0.1;
};

// Indices into the dataset, each split in a seeded random order.
struct SplitIndices {
  std::vector<size_t> train;
  std::vector<size_t> validation;
  std::vector<size_t> test;
};

// Splits the examples of each label separately (their indices shuffled with SplitMix64 from `seed`), taking
// round(n * train) for train, round(n * validation) for validation and the rest for test, so every split
// keeps the label proportions. Fractions must be >= 0 and sum to 1 (within 1e-6); otherwise berth::Error. The
// result depends only on `labels`, `fractions` and `seed`: the same on every platform.
SplitIndices stratified_split(const std::vector<int64_t>& labels, const SplitFractions& fractions,
                              uint64_t seed);

}  // namespace berth::data
