// Tests for the distributed sampler: torch's DistributedSampler (goldens from
// tests/goldens/distributed_sampler_goldens.py, its shuffle replaced by a Python SplitMix64), partitions,
// epochs.
#include "berth/data/distributed_sampler.h"

#include "berth/core/error.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace {

// The five basic fields; length grouping stays off.
berth::data::DistributedSamplerOptions make_options(size_t rank, size_t world, uint64_t seed, bool shuffle,
                                                    bool drop_last) {
  berth::data::DistributedSamplerOptions options;
  options.rank = rank;
  options.world_size = world;
  options.seed = seed;
  options.shuffle = shuffle;
  options.drop_last = drop_last;
  return options;
}

using berth::data::DistributedSampler;
using berth::data::DistributedSamplerOptions;

std::vector<size_t> indices(size_t n, DistributedSamplerOptions options, uint64_t epoch = 0) {
  DistributedSampler sampler(n, options);
  sampler.set_epoch(epoch);
  return sampler.indices();
}

TEST(DistributedSampler, MatchesTorchsSamplerWithBerthsShuffle) {
  std::ifstream in(berth::testing::golden_dir() + "/distributed_sampler.json");
  ASSERT_TRUE(in.good()) << "missing golden: build the berth_goldens target";
  const auto cases = nlohmann::json::parse(in)["cases"];
  ASSERT_GT(cases.size(), 100u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dump());
    DistributedSamplerOptions options;
    options.rank = c["rank"];
    options.world_size = c["world_size"];
    options.seed = c["seed"];
    options.shuffle = c["shuffle"];
    options.drop_last = c["drop_last"];
    DistributedSampler sampler(c["n"].get<size_t>(), options);
    sampler.set_epoch(c["epoch"]);
    EXPECT_EQ(sampler.num_samples(), c["num_samples"].get<size_t>());
    EXPECT_EQ(sampler.indices(), c["indices"].get<std::vector<size_t>>());
  }
}

// Every rank the same count; with drop_last the shares are disjoint, without they cover every row and repeat
// only the padding, which comes from the start of the epoch's order.
TEST(DistributedSampler, PartitionsAreEqualDisjointAndCovering) {
  for (size_t n : {0, 1, 2, 7, 10, 12, 13, 100}) {
    for (size_t world : {1, 2, 3, 4, 8, 16}) {
      for (bool drop_last : {false, true}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " world=" + std::to_string(world) +
                     " drop_last=" + std::to_string(drop_last));
        std::map<size_t, size_t> seen;
        size_t per_rank = 0;
        for (size_t rank = 0; rank < world; ++rank) {
          DistributedSamplerOptions options = make_options(rank, world, 7, true, drop_last);
          const std::vector<size_t> mine = indices(n, options, 3);
          if (rank == 0) per_rank = mine.size();
          EXPECT_EQ(mine.size(), per_rank);
          for (size_t row : mine) {
            EXPECT_LT(row, n);
            ++seen[row];
          }
        }
        if (drop_last) {
          EXPECT_EQ(per_rank, n / world);
          for (const auto& [row, count] : seen) EXPECT_EQ(count, 1u) << row;
        } else {
          EXPECT_EQ(per_rank, (n + world - 1) / world);
          EXPECT_EQ(seen.size(), n);
          size_t repeats = 0;
          for (const auto& [row, count] : seen) repeats += count - 1;
          EXPECT_EQ(repeats, per_rank * world - n);
          DistributedSampler sampler(n, make_options(0, world, 7, true, drop_last));
          sampler.set_epoch(3);
          const std::vector<size_t> order = sampler.global_order();
          for (size_t i = n; i < order.size(); ++i) EXPECT_EQ(order[i], order[i % n]);
        }
      }
    }
  }
}

TEST(DistributedSampler, EpochAndSeedDecideTheOrder) {
  const DistributedSamplerOptions options = make_options(0, 1, 5, true, false);
  const std::vector<size_t> epoch0 = indices(50, options, 0);
  EXPECT_EQ(indices(50, options, 0), epoch0);
  EXPECT_NE(indices(50, options, 1), epoch0);
  EXPECT_NE(indices(50, make_options(0, 1, 6, true, false), 0), epoch0);
  std::vector<size_t> sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);
  // torch seeds with seed + epoch, so seed 5 at epoch 1 is seed 6 at epoch 0
  EXPECT_EQ(indices(50, options, 1), indices(50, make_options(0, 1, 6, true, false), 0));

  std::vector<size_t> in_order(50);
  for (size_t i = 0; i < in_order.size(); ++i) in_order[i] = i;
  EXPECT_EQ(indices(50, make_options(0, 1, 5, false, false), 4), in_order);
}

TEST(DistributedSampler, BadRankOrWorldSize) {
  berth::testing::expect_contains(
      berth::testing::error_text([] { DistributedSampler(10, make_options(2, 2, 0, true, false)); }),
      {"rank 2 is out of range for world_size 2", "Fix: set RANK to 0..1"});
  berth::testing::expect_contains(
      berth::testing::error_text([] { DistributedSampler(10, make_options(0, 0, 0, true, false)); }),
      {"world_size must be at least 1, found 0"});
}

}  // namespace

namespace berth::data {
namespace {

std::vector<size_t> pseudo_lengths(size_t n) {
  std::vector<size_t> lengths(n);
  for (size_t i = 0; i < n; ++i) lengths[i] = 5 + (i * 7919) % 500;  // 5..504, scattered
  return lengths;
}

// Padding a batch costs (longest - each): the fraction of tokens that are padding over an epoch's batches.
double padding_fraction(const std::vector<size_t>& order, const std::vector<size_t>& lengths, size_t batch) {
  double padded = 0, real = 0;
  for (size_t b = 0; b < order.size(); b += batch) {
    size_t longest = 0;
    const size_t end = std::min(order.size(), b + batch);
    for (size_t i = b; i < end; ++i) longest = std::max(longest, lengths[order[i]]);
    for (size_t i = b; i < end; ++i) real += static_cast<double>(lengths[order[i]]);
    padded += static_cast<double>(longest * (end - b));
  }
  return 1.0 - real / padded;
}

TEST(GroupByLength, KeepsEveryRowOnceSortsMegabatchesAndPutsTheLongestFirst) {
  const size_t n = 1000, batch = 4;
  DistributedSamplerOptions options;
  options.seed = 3;
  options.lengths = pseudo_lengths(n);
  options.group_batch_size = batch;
  DistributedSampler grouped(n, options);
  const auto order = grouped.global_order();
  ASSERT_EQ(order.size(), n);
  std::vector<size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
  // The longest row of the dataset comes first.
  EXPECT_EQ(options.lengths[order[0]], *std::max_element(options.lengths.begin(), options.lengths.end()));
  // Megabatches of min(1000 / 16, 50) * 4 = 200 rows, each sorted longest first (the first one's head
  // swapped).
  const size_t mega = 200;
  for (size_t begin = 0; begin < n; begin += mega)
    for (size_t i = begin + 2; i < begin + mega; ++i)
      ASSERT_GE(options.lengths[order[i - 1]], options.lengths[order[i]]) << i;
  // The same rows as the plain shuffle of this seed and epoch, grouped: padding drops from ~50% to a few %.
  DistributedSamplerOptions plain_options = options;
  plain_options.lengths.clear();
  const auto plain = DistributedSampler(n, plain_options).global_order();
  EXPECT_GT(padding_fraction(plain, options.lengths, batch), 0.3);
  EXPECT_LT(padding_fraction(order, options.lengths, batch), 0.05);
  // Another epoch, another order.
  grouped.set_epoch(1);
  EXPECT_NE(grouped.global_order(), order);
}

TEST(GroupByLength, RanksShareEachGroupedStepAndCoverTheDataset) {
  const size_t n = 101;
  std::vector<size_t> all;
  for (size_t rank = 0; rank < 2; ++rank) {
    DistributedSamplerOptions options;
    options.rank = rank;
    options.world_size = 2;
    options.lengths = pseudo_lengths(n);
    options.group_batch_size = 8;
    const auto mine = DistributedSampler(n, options).indices();
    EXPECT_EQ(mine.size(), 51u);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), n);
}

TEST(GroupByLength, RefusesLengthsThatDoNotMatchTheDataset) {
  DistributedSamplerOptions options;
  options.lengths = {1, 2, 3};
  try {
    DistributedSampler(4, options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("got 3 lengths for 4 rows"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace berth::data
