// Tests for FlatLayout: offsets, padded partitions, the pieces inside a flat range, stage 3's per-parameter
// partition.
#include "berth/dist/flat_layout.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "support/test_support.h"

namespace {

using berth::dist::FlatLayout;
using berth::dist::ParamSegment;
using berth::testing::error_text;
using berth::testing::expect_contains;

// a: 2x3 (6), b: 4, c: 1x5 (5), d: 2: 17 elements.
FlatLayout small_layout() {
  return berth::dist::make_flat_layout({"a", "b", "c", "d"}, {torch::zeros({2, 3}), torch::zeros({4}),
                                                              torch::zeros({1, 5}), torch::zeros({2})});
}

TEST(FlatLayout, EntriesLieEndToEnd) {
  const FlatLayout layout = small_layout();
  ASSERT_EQ(layout.entries.size(), 4u);
  EXPECT_EQ(layout.numel, 17);
  EXPECT_EQ(layout.entries[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(layout.entries[1].offset, 6);
  EXPECT_EQ(layout.entries[2].offset, 10);
  EXPECT_EQ(layout.entries[3].offset, 15);
  EXPECT_EQ(layout.entries[3].numel, 2);
  EXPECT_EQ(layout.signature(), "a:2x3;b:4;c:1x5;d:2;");
  expect_contains(error_text([] { berth::dist::make_flat_layout({"a"}, {}); }), {"1 names for 0 parameters"});
}

TEST(FlatLayout, PartitionsArePaddedToEqualLengths) {
  const FlatLayout layout = small_layout();
  EXPECT_EQ(layout.padded_numel(1), 17);
  EXPECT_EQ(layout.padded_numel(2), 18);
  EXPECT_EQ(layout.padded_numel(4), 20);
  EXPECT_EQ(layout.padded_numel(17), 17);
  EXPECT_EQ(layout.partition(0, 4), (std::pair<int64_t, int64_t>(0, 5)));
  EXPECT_EQ(layout.partition(3, 4), (std::pair<int64_t, int64_t>(15, 20)));
  EXPECT_EQ(layout.partition(1, 2), (std::pair<int64_t, int64_t>(9, 18)));
  expect_contains(error_text([&] { layout.partition(2, 2); }), {"rank 2 is outside world size 2"});
  expect_contains(error_text([&] { layout.padded_numel(0); }), {"world size must be positive, got 0"});
}

TEST(FlatLayout, SegmentsInCutParametersAtTheRangeAndSkipPadding) {
  const FlatLayout layout = small_layout();
  // Rank 1 of 2: [9, 18) = a nothing, b [3, 4), c all, d all, then one element of padding.
  EXPECT_EQ(layout.segments_in(9, 18), (std::vector<ParamSegment>{{1, 3, 4}, {2, 0, 5}, {3, 0, 2}}));
  EXPECT_EQ(layout.segments_in(0, 9), (std::vector<ParamSegment>{{0, 0, 6}, {1, 0, 3}}));
  EXPECT_EQ(layout.segments_in(17, 20), std::vector<ParamSegment>{});
  EXPECT_EQ(layout.segments_in(11, 12), (std::vector<ParamSegment>{{2, 1, 2}}));
  // Every world size's partitions cover each element exactly once.
  for (int64_t world = 1; world <= 6; ++world) {
    std::vector<int> seen(static_cast<size_t>(layout.numel), 0);
    for (int64_t r = 0; r < world; ++r) {
      const auto [begin, end] = layout.partition(r, world);
      for (const ParamSegment& s : layout.segments_in(begin, end))
        for (int64_t i = s.begin; i < s.end; ++i)
          ++seen[static_cast<size_t>(layout.entries[s.param].offset + i)];
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), layout.numel) << "world " << world;
  }
}

TEST(FlatLayout, PerParameterPartitionSplitsEachParameter) {
  const FlatLayout layout = small_layout();
  EXPECT_EQ(berth::dist::per_parameter_partition(layout, 0, 2),
            (std::vector<ParamSegment>{{0, 0, 3}, {1, 0, 2}, {2, 0, 3}, {3, 0, 1}}));
  EXPECT_EQ(berth::dist::per_parameter_partition(layout, 1, 2),
            (std::vector<ParamSegment>{{0, 3, 6}, {1, 2, 4}, {2, 3, 5}, {3, 1, 2}}));
  // 3 ranks of d (2 elements): pieces of 1, rank 2 owns none of it.
  EXPECT_EQ(berth::dist::per_parameter_partition(layout, 2, 3),
            (std::vector<ParamSegment>{{0, 4, 6}, {2, 4, 5}}));
  expect_contains(error_text([&] { berth::dist::per_parameter_partition(layout, 3, 3); }),
                  {"rank 3 is outside world size 3"});
}

TEST(FlatLayout, PersistenceThresholdGivesSmallParametersWholeToRankZero) {
  const FlatLayout layout = small_layout();
  // Threshold 4: b (4) and d (2) are not split; rank 0 owns them for the optimizer.
  EXPECT_EQ(berth::dist::per_parameter_partition(layout, 0, 2, 4),
            (std::vector<ParamSegment>{{0, 0, 3}, {1, 0, 4}, {2, 0, 3}, {3, 0, 2}}));
  EXPECT_EQ(berth::dist::per_parameter_partition(layout, 1, 2, 4),
            (std::vector<ParamSegment>{{0, 3, 6}, {2, 3, 5}}));
  for (int64_t world = 1; world <= 5; ++world) {
    int64_t total = 0;
    for (int64_t r = 0; r < world; ++r)
      for (const ParamSegment& s : berth::dist::per_parameter_partition(layout, r, world, 5))
        total += s.numel();
    EXPECT_EQ(total, layout.numel) << "world " << world;
  }
}

TEST(FlatLayout, IndexOfNamesTheMissingParameter) {
  const FlatLayout layout = small_layout();
  EXPECT_EQ(layout.index_of("c"), 2);
  expect_contains(error_text([&] { layout.index_of("e"); }),
                  {"the parameter layout has no parameter named 'e' (it has 4 parameters)",
                   "Fix: use the model this state was made for"});
}

}  // namespace
