// Stratified splits and SplitMix64: sizes per label, determinism, seeds, disjoint and complete splits.
#include "berth/data/stratified_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "berth/data/split_mix64.h"
#include "support/test_support.h"

namespace {

using namespace berth::data;

std::vector<int64_t> labels_with(size_t zeros, size_t ones) {
  std::vector<int64_t> labels(zeros, 0);
  labels.insert(labels.end(), ones, 1);
  // Interleave so the split cannot rely on labels being grouped.
  SplitMix64 rng(7);
  shuffle(labels, rng);
  return labels;
}

size_t count_label(const std::vector<size_t>& indices, const std::vector<int64_t>& labels, int64_t label) {
  return static_cast<size_t>(
      std::count_if(indices.begin(), indices.end(), [&](size_t i) { return labels[i] == label; }));
}

TEST(SplitMix64, MatchesTheReferenceSequence) {
  // The first outputs for seed 0 as published with the algorithm (also java.util.SplittableRandom's).
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(rng.next(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(rng.next(), 0x06C45D188009454FULL);
}

TEST(SplitMix64, BelowStaysInRangeAndShuffleIsAPermutation) {
  SplitMix64 rng(1);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(rng.below(3), 3u);
  std::vector<int> items(100);
  std::iota(items.begin(), items.end(), 0);
  std::vector<int> shuffled = items;
  shuffle(shuffled, rng);
  EXPECT_NE(shuffled, items);
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, items);
}

TEST(StratifiedSplit, EachLabelSplitByTheFractions) {
  const auto labels = labels_with(1000, 300);
  SplitIndices split = stratified_split(labels, {}, 42);
  EXPECT_EQ(count_label(split.train, labels, 0), 800u);
  EXPECT_EQ(count_label(split.validation, labels, 0), 100u);
  EXPECT_EQ(count_label(split.test, labels, 0), 100u);
  EXPECT_EQ(count_label(split.train, labels, 1), 240u);
  EXPECT_EQ(count_label(split.validation, labels, 1), 30u);
  EXPECT_EQ(count_label(split.test, labels, 1), 30u);
}

TEST(StratifiedSplit, EveryIndexExactlyOnce) {
  const auto labels = labels_with(37, 11);
  SplitIndices split = stratified_split(labels, {0.7, 0.2, 0.1}, 3);
  std::vector<size_t> all = split.train;
  all.insert(all.end(), split.validation.begin(), split.validation.end());
  all.insert(all.end(), split.test.begin(), split.test.end());
  std::sort(all.begin(), all.end());
  std::vector<size_t> expected(labels.size());
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(all, expected);
}

TEST(StratifiedSplit, SameSeedSameSplitOtherSeedOtherSplit) {
  const auto labels = labels_with(200, 100);
  SplitIndices a = stratified_split(labels, {}, 5);
  SplitIndices b = stratified_split(labels, {}, 5);
  SplitIndices c = stratified_split(labels, {}, 6);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.test, b.test);
  EXPECT_NE(std::set<size_t>(a.test.begin(), a.test.end()), std::set<size_t>(c.test.begin(), c.test.end()));
}

TEST(StratifiedSplit, ZeroTestFractionLeavesTestEmpty) {
  const auto labels = labels_with(15, 7);
  SplitIndices split = stratified_split(labels, {0.9, 0.1, 0.0}, 1);
  EXPECT_TRUE(split.test.empty());
  EXPECT_EQ(split.train.size() + split.validation.size(), labels.size());
}

TEST(StratifiedSplit, BadFractionsAreRefused) {
  berth::testing::expect_contains(
      berth::testing::error_text([] {
        stratified_split({0, 1}, {0.8, 0.1, 0.2}, 1);
      }),
      {"split fractions must be >= 0 and sum to 1, found train 0.8, validation 0.1, test 0.2 (sum 1.1)",
       "Fix:"});
  berth::testing::expect_contains(berth::testing::error_text([] {
                                    stratified_split({0, 1}, {1.1, -0.1, 0.0}, 1);
                                  }),
                                  {"split fractions must be >= 0"});
}

}  // namespace
