// Stratified, seeded train/validation/test split.
#include "berth/data/stratified_split.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "berth/core/error.h"
#include "berth/data/split_mix64.h"

namespace berth::data {

SplitIndices stratified_split(const std::vector<int64_t>& labels, const SplitFractions& fractions,
                              uint64_t seed) {
  const double sum = fractions.train + fractions.validation + fractions.test;
  BERTH_CHECK(
      fractions.train >= 0 && fractions.validation >= 0 && fractions.test >= 0 && std::abs(sum - 1.0) <= 1e-6,
      "split fractions must be >= 0 and sum to 1, found train ", fractions.train, ", validation ",
      fractions.validation, ", test ", fractions.test, " (sum ", sum,
      "). Fix: e.g. 0.8/0.1/0.1, or 0.9/0.1/0 for no test split");

  // std::map: labels visited in ascending order, so the draws from the generator are in a fixed order too.
  std::map<int64_t, std::vector<size_t>> by_label;
  for (size_t i = 0; i < labels.size(); ++i) by_label[labels[i]].push_back(i);

  SplitMix64 rng(seed);
  SplitIndices split;
  for (auto& [label, indices] : by_label) {
    shuffle(indices, rng);
    const double n = static_cast<double>(indices.size());
    const size_t n_train = std::min(indices.size(), static_cast<size_t>(std::llround(n * fractions.train)));
    const size_t n_validation =
        std::min(indices.size() - n_train, static_cast<size_t>(std::llround(n * fractions.validation)));
    // A zero test fraction means none, even when rounding left one over: it goes to train.
    const size_t n_rest = indices.size() - n_train - n_validation;
    const size_t n_test = fractions.test > 0 ? n_rest : 0;
    auto it = indices.begin();
    split.train.insert(split.train.end(), it, it + static_cast<std::ptrdiff_t>(n_train + (n_rest - n_test)));
    it += static_cast<std::ptrdiff_t>(n_train + (n_rest - n_test));
    split.validation.insert(split.validation.end(), it, it + static_cast<std::ptrdiff_t>(n_validation));
    it += static_cast<std::ptrdiff_t>(n_validation);
    split.test.insert(split.test.end(), it, indices.end());
  }
  // Labels were appended one after another; mix them so a split read in order is not sorted by label.
  shuffle(split.train, rng);
  shuffle(split.validation, rng);
  shuffle(split.test, rng);
  return split;
}

}  // namespace berth::data
