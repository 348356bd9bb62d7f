// Tests for the DataLoader: padding content, epochs, ranks against one rank, prefetch against none, early
// break, errors and a stuck collate.
#include "berth/data/data_loader.h"

#include "berth/core/error.h"
#include "support/synthetic_encodings.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using berth::Batch;
using berth::data::DataLoader;
using berth::data::DataLoaderOptions;
using berth::data::TokenizedDataset;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::synthetic_encoding;

TokenizedDataset synthetic_dataset(size_t rows, at::Tensor labels) {
  std::vector<berth::tokenizer::Encoding> encodings;
  for (size_t row = 0; row < rows; ++row) encodings.push_back(synthetic_encoding(row));
  return TokenizedDataset(std::move(encodings), std::move(labels));
}

TokenizedDataset labelled_dataset(size_t rows) {
  return synthetic_dataset(rows, torch::arange(static_cast<int64_t>(rows)) * 10);
}

std::vector<Batch> all_batches(const DataLoader& loader) {
  std::vector<Batch> out;
  for (const Batch& batch : loader) {
    out.push_back(batch);
    if (out.size() > loader.size()) break;  // bounded even if the loader overran
  }
  return out;
}

bool same_batches(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    for (const auto& [name, tensor] : a[i])
      if (!b[i].count(name) || !torch::equal(tensor, b[i].at(name))) return false;
  }
  return true;
}

// Every cell follows from the rows' encodings: tokens, then pad id / type 0 / mask 0 up to the padded length.
TEST(DataLoader, CollatePadsToTheLongestRoundedUp) {
  const TokenizedDataset dataset = labelled_dataset(20);
  const std::vector<size_t> rows = {4, 0, 9, 13};
  for (size_t multiple : {0, 1, 8}) {
    SCOPED_TRACE(multiple);
    const Batch batch = berth::data::collate(dataset, rows, /*pad_token_id=*/-3, multiple);
    size_t longest = 0;
    for (size_t row : rows) longest = std::max(longest, dataset.encoding(row).size());
    const size_t expected_length = multiple ? (longest + multiple - 1) / multiple * multiple : longest;
    ASSERT_EQ(batch.at("input_ids").sizes(),
              (std::vector<int64_t>{4, static_cast<int64_t>(expected_length)}));
    for (const char* name : {"input_ids", "token_type_ids", "attention_mask"}) {
      EXPECT_EQ(batch.at(name).sizes(), batch.at("input_ids").sizes()) << name;
      EXPECT_EQ(batch.at(name).scalar_type(), at::kLong) << name;
    }
    for (size_t b = 0; b < rows.size(); ++b) {
      const auto& e = dataset.encoding(rows[b]);
      for (size_t t = 0; t < expected_length; ++t) {
        const bool token = t < e.size();
        const auto i = static_cast<int64_t>(b), j = static_cast<int64_t>(t);
        EXPECT_EQ(batch.at("input_ids")[i][j].item<int64_t>(), token ? e.ids[t] : -3);
        EXPECT_EQ(batch.at("token_type_ids")[i][j].item<int64_t>(), token ? e.type_ids[t] : 0);
        EXPECT_EQ(batch.at("attention_mask")[i][j].item<int64_t>(), token ? 1 : 0);
      }
    }
    EXPECT_TRUE(torch::equal(batch.at("labels"), torch::tensor({40, 0, 90, 130})));
  }
}

TEST(DataLoader, MissingTypeIdsAndMaskReadAsZeroAndOne) {
  berth::tokenizer::Encoding a, b;
  a.ids = {5, 6, 7};
  b.ids = {8};
  const TokenizedDataset dataset({a, b}, at::Tensor());
  const Batch batch = berth::data::collate(dataset, {0, 1}, 0);
  EXPECT_TRUE(torch::equal(batch.at("input_ids"), torch::tensor({5, 6, 7, 8, 0, 0}).reshape({2, 3})));
  EXPECT_TRUE(torch::equal(batch.at("token_type_ids"), torch::zeros({2, 3}, torch::kLong)));
  EXPECT_TRUE(torch::equal(batch.at("attention_mask"), torch::tensor({1, 1, 1, 1, 0, 0}).reshape({2, 3})));
  EXPECT_FALSE(batch.count("labels"));
}

TEST(DataLoader, LabelsOfEachKindFollowTheirRows) {
  const at::Tensor regression = torch::arange(6, torch::kFloat) / 4;
  const at::Tensor multi = torch::arange(18, torch::kFloat).reshape({6, 3});
  for (const at::Tensor& labels : {regression, multi}) {
    const TokenizedDataset dataset = synthetic_dataset(6, labels);
    const Batch batch = berth::data::collate(dataset, {5, 2}, 0);
    EXPECT_TRUE(torch::equal(batch.at("labels"), labels.index_select(0, torch::tensor({5, 2}))));
  }
}

TEST(DataLoader, OneEpochVisitsThisRanksRowsInBatches) {
  const TokenizedDataset dataset = labelled_dataset(23);
  for (bool drop_last : {false, true}) {
    DataLoaderOptions options;
    options.batch_size = 4;
    options.drop_last = drop_last;
    options.seed = 11;
    const DataLoader loader(dataset, options);
    EXPECT_EQ(loader.size(), drop_last ? 5u : 6u);
    const std::vector<Batch> batches = all_batches(loader);
    ASSERT_EQ(batches.size(), loader.size());
    std::vector<int64_t> labels;
    for (const Batch& batch : batches) {
      for (int64_t i = 0; i < batch.at("labels").size(0); ++i)
        labels.push_back(batch.at("labels")[i].item<int64_t>());
    }
    EXPECT_EQ(labels.size(), drop_last ? 20u : 23u);
    EXPECT_EQ(batches.back().at("labels").size(0), drop_last ? 4 : 3);
    std::sort(labels.begin(), labels.end());
    EXPECT_EQ(std::adjacent_find(labels.begin(), labels.end()), labels.end()) << "a row twice in one epoch";
  }
}

TEST(DataLoader, EpochChangesTheOrderAndTheSameEpochRepeatsIt) {
  const TokenizedDataset dataset = labelled_dataset(40);
  DataLoaderOptions options;
  options.batch_size = 8;
  options.seed = 3;
  DataLoader loader(dataset, options);
  loader.set_epoch(2);
  const std::vector<Batch> epoch2 = all_batches(loader);
  EXPECT_TRUE(same_batches(all_batches(loader), epoch2));  // a second loop over the same epoch
  loader.set_epoch(3);
  EXPECT_FALSE(same_batches(all_batches(loader), epoch2));
  DataLoader other(dataset, options);
  other.set_epoch(2);
  EXPECT_TRUE(same_batches(all_batches(other), epoch2));

  options.shuffle = false;
  const DataLoader ordered(dataset, options);
  EXPECT_EQ(ordered.batch_rows()[1], (std::vector<size_t>{8, 9, 10, 11, 12, 13, 14, 15}));
}

// Data parallelism must see the same data as one process with the global batch: at step k, the rows of the
// two ranks' batches together are the rows of the single rank's batch, and so are the padded contents.
TEST(DataLoader, TwoRanksTogetherAreOneRankWithTheDoubleBatch) {
  const TokenizedDataset dataset = labelled_dataset(48);
  DataLoaderOptions single;
  single.batch_size = 8;
  single.seed = 9;
  DataLoader one(dataset, single);
  one.set_epoch(1);
  std::vector<std::vector<std::vector<size_t>>> per_rank;
  for (size_t rank = 0; rank < 2; ++rank) {
    DataLoaderOptions options = single;
    options.batch_size = 4;
    options.rank = rank;
    options.world_size = 2;
    DataLoader loader(dataset, options);
    loader.set_epoch(1);
    EXPECT_EQ(loader.size(), one.size());
    per_rank.push_back(loader.batch_rows());
  }
  const auto global = one.batch_rows();
  ASSERT_EQ(global.size(), 6u);
  for (size_t k = 0; k < global.size(); ++k) {
    std::vector<size_t> together = per_rank[0][k];
    together.insert(together.end(), per_rank[1][k].begin(), per_rank[1][k].end());
    std::sort(together.begin(), together.end());
    std::vector<size_t> expected = global[k];
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(together, expected) << "step " << k;
    // The same rows give the same labels and (per row) the same tokens.
    const Batch merged = berth::data::collate(dataset, together, 0);
    const Batch reference = berth::data::collate(dataset, expected, 0);
    EXPECT_TRUE(same_batches({merged}, {reference}));
  }
}

TEST(DataLoader, PrefetchGivesTheSameBatchesAsNone) {
  const TokenizedDataset dataset = labelled_dataset(61);
  DataLoaderOptions options;
  options.batch_size = 5;
  options.pad_to_multiple_of = 4;
  options.pad_token_id = 7;
  options.prefetch = 0;
  DataLoader synchronous(dataset, options);
  synchronous.set_epoch(4);
  const std::vector<Batch> expected = all_batches(synchronous);
  ASSERT_EQ(expected.size(), 13u);
  for (size_t prefetch : {1, 2, 20}) {
    options.prefetch = prefetch;
    DataLoader loader(dataset, options);
    loader.set_epoch(4);
    EXPECT_TRUE(same_batches(all_batches(loader), expected)) << prefetch;
  }
}

// Collates counted; the producer may run ahead by the queue's capacity plus the batch in its hands, no
// further.
TEST(DataLoader, BreakingEarlyStopsThePrefetchThread) {
  const TokenizedDataset dataset = labelled_dataset(200);
  std::atomic<int> collated{0};
  DataLoaderOptions options;
  options.batch_size = 2;
  options.prefetch = 3;
  options.collate_fn = [&](const TokenizedDataset& d, const std::vector<size_t>& rows) {
    ++collated;
    return berth::data::collate(d, rows, 0);
  };
  const DataLoader loader(dataset, options);
  int seen = 0;
  for (const Batch& batch : loader) {
    EXPECT_EQ(batch.at("input_ids").size(0), 2);
    if (++seen == 2) break;
  }
  // The loop's iterators are gone: the thread has been joined, so the count is final.
  EXPECT_LE(collated.load(), 2 + 3 + 1);
  EXPECT_EQ(all_batches(loader).size(), loader.size());  // a new loop starts afresh
}

TEST(DataLoader, CollateErrorsReachTheConsumerAtTheirBatch) {
  const TokenizedDataset dataset = labelled_dataset(20);
  for (size_t prefetch : {0, 2}) {
    SCOPED_TRACE(prefetch);
    DataLoaderOptions options;
    options.batch_size = 4;
    options.prefetch = prefetch;
    int calls = 0;
    options.collate_fn = [&calls](const TokenizedDataset& d, const std::vector<size_t>& rows) {
      if (calls++ == 2) throw std::runtime_error("collate failed on purpose");
      return berth::data::collate(d, rows, 0);
    };
    const DataLoader loader(dataset, options);
    int delivered = 0;
    auto it = loader.begin();
    for (int step = 0; step < 2; ++step, ++it) {
      EXPECT_EQ((*it).at("input_ids").size(0), 4);
      ++delivered;
    }
    EXPECT_EQ(error_text<std::runtime_error>([&] { *it; }), "collate failed on purpose");
    EXPECT_EQ(delivered, 2);
    expect_contains(error_text([&] { *it; }),
                    {"this loop stopped at batch 2 of 5 after collating it failed"});
  }
}

// A collate that never returns (held at a gate the test opens at the end) becomes an error after
// batch_timeout.
TEST(DataLoader, AStuckCollateIsAnErrorNotAHang) {
  const TokenizedDataset dataset = labelled_dataset(8);
  std::mutex mutex;
  std::condition_variable opened;
  bool open = false;
  DataLoaderOptions options;
  options.batch_size = 4;
  options.prefetch = 1;
  options.batch_timeout = std::chrono::milliseconds(50);
  options.collate_fn = [&](const TokenizedDataset& d, const std::vector<size_t>& rows) {
    std::unique_lock<std::mutex> lock(mutex);
    opened.wait_for(lock, std::chrono::seconds(60), [&] { return open; });
    return berth::data::collate(d, rows, 0);
  };
  const DataLoader loader(dataset, options);
  {
    // The gate opens before the iterator goes (declared after it, destroyed first), so the join is quick.
    auto it = loader.begin();
    struct Gate {
      std::mutex& mutex;
      std::condition_variable& opened;
      bool& open;
      ~Gate() {
        {
          std::lock_guard<std::mutex> lock(mutex);
          open = true;
        }
        opened.notify_all();
      }
    } gate{mutex, opened, open};
    expect_contains(error_text([&] { *it; }),
                    {"the prefetch thread delivered no batch within 50 ms (batch 0 of 2)", "batch_timeout"});
  }
}

TEST(DataLoader, IteratorsOutliveTheLoader) {
  const TokenizedDataset dataset = labelled_dataset(10);
  DataLoaderOptions options;
  options.batch_size = 3;
  auto loader = std::make_unique<DataLoader>(dataset, options);
  auto it = loader->begin();
  const auto end = loader->end();
  loader.reset();
  size_t count = 0;
  for (; it != end && count < 10; ++it) count += static_cast<size_t>((*it).at("labels").size(0));
  EXPECT_EQ(count, 10u);
}

TEST(DataLoader, EmptyDatasetHasNoBatches) {
  const TokenizedDataset dataset({}, at::Tensor());
  const DataLoader loader(dataset, DataLoaderOptions{});
  EXPECT_EQ(loader.size(), 0u);
  EXPECT_TRUE(loader.begin() == loader.end());
}

TEST(DataLoader, BadOptions) {
  const TokenizedDataset dataset = labelled_dataset(4);
  DataLoaderOptions options;
  options.batch_size = 0;
  expect_contains(error_text([&] { DataLoader(dataset, options); }),
                  {"batch_size must be at least 1, found 0"});
  options.batch_size = 2;
  options.rank = 3;
  options.world_size = 2;
  expect_contains(error_text([&] { DataLoader(dataset, options); }),
                  {"rank 3 is out of range for world_size 2"});
}

}  // namespace
