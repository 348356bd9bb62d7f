// Tests for the tokenised dataset: one encode per row in order on any thread count, labels, the fingerprinted
// cache.
#include "berth/data/tokenized_dataset.h"

#include "berth/core/error.h"
#include "support/synthetic_encodings.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using berth::data::TokenizedDataset;
using berth::data::TokenizedDatasetOptions;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::synthetic_encoding;

bool same(const berth::tokenizer::Encoding& a, const berth::tokenizer::Encoding& b) {
  return a.ids == b.ids && a.type_ids == b.type_ids && a.attention_mask == b.attention_mask &&
         a.special_tokens_mask == b.special_tokens_mask && a.offsets == b.offsets &&
         a.sequence_ids == b.sequence_ids;
}

void expect_synthetic(const TokenizedDataset& dataset, size_t rows) {
  ASSERT_EQ(dataset.size(), rows);
  for (size_t row = 0; row < rows; ++row)
    EXPECT_TRUE(same(dataset.encoding(row), synthetic_encoding(row))) << row;
}

TEST(TokenizedDataset, EncodesEachRowOnceInOrderOnAnyThreadCount) {
  constexpr size_t kRows = 103;
  for (size_t threads : {1, 2, 4, 16, 200}) {
    SCOPED_TRACE(threads);
    std::vector<std::atomic<int>> calls(kRows);
    TokenizedDatasetOptions options;
    options.threads = threads;
    const TokenizedDataset dataset = TokenizedDataset::build(
        kRows,
        [&](size_t row) {
          ++calls[row];
          return synthetic_encoding(row);
        },
        torch::arange(static_cast<int64_t>(kRows)) % 3, options);
    for (size_t row = 0; row < kRows; ++row) EXPECT_EQ(calls[row].load(), 1) << row;
    expect_synthetic(dataset, kRows);
    EXPECT_FALSE(dataset.from_cache());
    EXPECT_TRUE(torch::equal(dataset.labels(), torch::arange(static_cast<int64_t>(kRows)) % 3));
  }
}

// Rows 3 and 7 fail; on 4 threads they fall to different threads, and row 3's error is the one reported.
TEST(TokenizedDataset, ReportsTheErrorOfTheLowestFailingRow) {
  for (size_t threads : {1, 4}) {
    TokenizedDatasetOptions options;
    options.threads = threads;
    const std::string text = error_text<std::runtime_error>([&] {
      TokenizedDataset::build(
          10,
          [](size_t row) {
            if (row == 3 || row == 7) throw std::runtime_error("cannot encode row " + std::to_string(row));
            return synthetic_encoding(row);
          },
          at::Tensor(), options);
    });
    EXPECT_EQ(text, "cannot encode row 3") << threads;
  }
}

TEST(TokenizedDataset, AcceptsTheThreeLabelKindsAndNone) {
  auto encodings = [] {
    return std::vector<berth::tokenizer::Encoding>{synthetic_encoding(0), synthetic_encoding(1)};
  };
  EXPECT_EQ(TokenizedDataset(encodings(), torch::tensor({0, 1}, torch::kLong)).labels().scalar_type(),
            at::kLong);
  EXPECT_EQ(TokenizedDataset(encodings(), torch::tensor({0.5, 1.5})).labels().dim(), 1);
  EXPECT_EQ(TokenizedDataset(encodings(), torch::zeros({2, 4})).labels().size(1), 4);
  // Question answering's start/end token positions.
  EXPECT_EQ(TokenizedDataset(encodings(), torch::zeros({2, 2}, torch::kLong)).labels().size(1), 2);
  EXPECT_FALSE(TokenizedDataset(encodings(), at::Tensor()).labels().defined());
  expect_contains(error_text([&] { TokenizedDataset(encodings(), torch::zeros({3}, torch::kLong)); }),
                  {"2 encodings but labels of shape [3]", "one label (row) per example"});
  // (N, T) int64: per-token labels (token classification), and (N, 2) answer spans among them.
  EXPECT_EQ(TokenizedDataset(encodings(), torch::zeros({2, 4}, torch::kLong)).labels().size(1), 4);
  EXPECT_EQ(TokenizedDataset(encodings(), torch::zeros({2, 2}, torch::kLong)).labels().size(1), 2);
  expect_contains(error_text([&] { TokenizedDataset(encodings(), torch::zeros({2}, torch::kInt)); }),
                  {"labels must be (N,) int64 (single-label), (N,) float (regression), (N, L) float",
                   "(N, T) int64 (per token)", "found shape [2] of Int"});
}

TEST(TokenizedDataset, RefusesEncodingsWhoseFieldsDisagree) {
  berth::tokenizer::Encoding bad = synthetic_encoding(4);
  bad.type_ids.pop_back();
  expect_contains(error_text([&] {
                    TokenizedDataset({synthetic_encoding(0), bad}, at::Tensor());
                  }),
                  {"row 1: type_ids has", "entries but ids has"});
  // Fields left empty are allowed: the loader fills in defaults.
  berth::tokenizer::Encoding ids_only;
  ids_only.ids = {1, 2, 3};
  EXPECT_NO_THROW(TokenizedDataset({ids_only}, at::Tensor()));
}

TEST(TokenizedDataset, CacheIsUsedForTheSameFingerprintAndRebuiltOtherwise) {
  berth::testing::TempDir dir;
  constexpr size_t kRows = 37;
  std::atomic<int> calls{0};
  auto encode = [&](size_t row) {
    ++calls;
    berth::tokenizer::Encoding e = synthetic_encoding(row);
    if (row == 5) e.special_tokens_mask.clear();  // a field left empty must stay empty
    return e;
  };
  std::vector<std::string> notes;
  TokenizedDatasetOptions options;
  options.cache_path = dir.file("train.tokens");
  options.fingerprint = "vocab=abc;max_length=8";
  options.threads = 3;
  options.note = [&](const std::string& text) { notes.push_back(text); };
  const at::Tensor labels = torch::rand({static_cast<int64_t>(kRows), 3});

  const TokenizedDataset built = TokenizedDataset::build(kRows, encode, labels, options);
  EXPECT_EQ(calls.load(), static_cast<int>(kRows));
  EXPECT_FALSE(built.from_cache());
  EXPECT_TRUE(notes.empty());

  const TokenizedDataset cached = TokenizedDataset::build(kRows, encode, labels, options);
  EXPECT_EQ(calls.load(), static_cast<int>(kRows));  // not called again
  EXPECT_TRUE(cached.from_cache());
  ASSERT_EQ(cached.size(), kRows);
  for (size_t row = 0; row < kRows; ++row)
    EXPECT_TRUE(same(cached.encoding(row), built.encoding(row))) << row;
  EXPECT_TRUE(cached.encoding(5).special_tokens_mask.empty());
  EXPECT_TRUE(torch::equal(cached.labels(), labels));
  EXPECT_TRUE(notes.empty());

  options.fingerprint = "vocab=def;max_length=8";
  const TokenizedDataset stale = TokenizedDataset::build(kRows, encode, labels, options);
  EXPECT_EQ(calls.load(), static_cast<int>(2 * kRows));
  EXPECT_FALSE(stale.from_cache());
  ASSERT_EQ(notes.size(), 1u);
  expect_contains(notes[0], {"rebuilding the tokenized cache:",
                             "train.tokens: written for fingerprint "
                             "'vocab=abc;max_length=8', not 'vocab=def;max_length=8'"});

  // A damaged file: rebuilt, and the rewritten cache serves the next build.
  { std::ofstream(options.cache_path, std::ios::binary | std::ios::trunc) << "not a cache"; }
  EXPECT_FALSE(TokenizedDataset::build(kRows, encode, labels, options).from_cache());
  ASSERT_EQ(notes.size(), 2u);
  expect_contains(notes[1], {"rebuilding the tokenized cache:", "train.tokens: the header length is"});
  EXPECT_TRUE(TokenizedDataset::build(kRows, encode, labels, options).from_cache());
  EXPECT_EQ(calls.load(), static_cast<int>(3 * kRows));
  EXPECT_EQ(notes.size(), 2u);

  // Another dataset size under the same fingerprint is stale too.
  EXPECT_FALSE(
      TokenizedDataset::build(kRows - 1, encode, labels.slice(0, 0, kRows - 1), options).from_cache());
  ASSERT_EQ(notes.size(), 3u);
  expect_contains(notes[2], {"holds 37 rows, the dataset has 36"});
}

TEST(TokenizedDataset, LoadCacheRefusesOtherFiles) {
  berth::testing::TempDir dir;
  const TokenizedDataset dataset({synthetic_encoding(0)}, at::Tensor());
  dataset.save_cache(dir.file("c"), "fp");
  expect_contains(error_text([&] { TokenizedDataset::load_cache(dir.file("c"), "other"); }),
                  {"written for fingerprint 'fp', not 'other'"});
  EXPECT_EQ(TokenizedDataset::load_cache(dir.file("c"), "fp").size(), 1u);
}

}  // namespace
