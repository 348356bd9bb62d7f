// berth's batch collation against HF transformers' DataCollatorWithPadding (goldens from
// tests/goldens/data_collator_goldens.py): the same bert-base-uncased features, padded to the longest and to
// a multiple of 8, give the same input_ids, token_type_ids, attention_mask and labels.
#include "berth/data/data_loader.h"

#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using berth::Batch;
using Json = nlohmann::json;

Json data_collator_golden() {
  std::ifstream in(berth::testing::golden_dir() + "/data/data_collator.json");
  if (!in.good()) return Json();
  return Json::parse(in);
}

// The features as a dataset: each row's ids, type ids and mask as the tokenizer returned them, and its label.
berth::data::TokenizedDataset dataset_of(const Json& features) {
  std::vector<berth::tokenizer::Encoding> encodings;
  std::vector<int64_t> labels;
  for (const Json& f : features) {
    berth::tokenizer::Encoding e;
    e.ids = f.at("input_ids").get<std::vector<int64_t>>();
    e.type_ids = f.at("token_type_ids").get<std::vector<int64_t>>();
    e.attention_mask = f.at("attention_mask").get<std::vector<int64_t>>();
    encodings.push_back(std::move(e));
    labels.push_back(f.at("label").get<int64_t>());
  }
  return berth::data::TokenizedDataset(std::move(encodings), torch::tensor(labels));
}

// A (B, T) int64 tensor from the collator's nested lists.
at::Tensor matrix(const Json& rows) {
  std::vector<int64_t> values;
  for (const Json& row : rows)
    for (const Json& value : row) values.push_back(value.get<int64_t>());
  const auto batch = static_cast<int64_t>(rows.size());
  return torch::tensor(values).reshape({batch, batch ? static_cast<int64_t>(values.size()) / batch : 0});
}

void expect_same_batch(const Batch& actual, const Json& expected) {
  for (const char* name : {"input_ids", "token_type_ids", "attention_mask"}) {
    ASSERT_TRUE(actual.count(name)) << name;
    const at::Tensor want = matrix(expected.at(name));
    EXPECT_EQ(actual.at(name).sizes(), want.sizes()) << name;
    EXPECT_EQ(actual.at(name).scalar_type(), at::kLong) << name;
    EXPECT_TRUE(actual.at(name).sizes() == want.sizes() && torch::equal(actual.at(name), want))
        << name << "\nberth:\n"
        << actual.at(name) << "\nHF:\n"
        << want;
  }
  ASSERT_TRUE(actual.count("labels"));
  EXPECT_TRUE(
      torch::equal(actual.at("labels"), torch::tensor(expected.at("labels").get<std::vector<int64_t>>())));
}

size_t multiple_of(const Json& batch) {
  const Json& value = batch.at("pad_to_multiple_of");
  return value.is_null() ? 0 : value.get<size_t>();
}

TEST(DataCollatorGolden, CollateMatchesHfsDataCollatorWithPadding) {
  const Json g = data_collator_golden();
  ASSERT_TRUE(g.is_object()) << "missing golden data/data_collator.json: build the berth_goldens target";
  const berth::data::TokenizedDataset dataset = dataset_of(g.at("features"));
  const auto pad_token_id = g.at("pad_token_id").get<int64_t>();
  EXPECT_EQ(g.at("pad_token_type_id").get<int64_t>(), 0);  // berth pads token types with 0
  int longest = 0, rounded = 0, rounding_mattered = 0;
  for (const Json& expected : g.at("batches")) {
    SCOPED_TRACE(expected.at("rows").dump() + " pad_to_multiple_of " +
                 expected.at("pad_to_multiple_of").dump());
    ASSERT_EQ(expected.at("padding").get<std::string>(), "longest");
    const auto rows = expected.at("rows").get<std::vector<size_t>>();
    const size_t multiple = multiple_of(expected);
    expect_same_batch(berth::data::collate(dataset, rows, pad_token_id, multiple), expected);
    if (multiple == 0) {
      ++longest;
      continue;
    }
    ++rounded;
    size_t longest_row = 0;
    for (size_t row : rows) longest_row = std::max(longest_row, dataset.encoding(row).size());
    if (matrix(expected.at("input_ids")).size(1) != static_cast<int64_t>(longest_row)) ++rounding_mattered;
  }
  // Both paddings, and batches whose multiple of 8 is longer than their longest row.
  EXPECT_GE(longest, 5);
  EXPECT_GE(rounded, 5);
  EXPECT_GE(rounding_mattered, 2);
}

TEST(DataCollatorGolden, DataLoaderBatchesMatchHfsCollator) {
  // Unshuffled, one rank, batches of 3: the golden's consecutive-row batches.
  const Json g = data_collator_golden();
  ASSERT_TRUE(g.is_object()) << "missing golden data/data_collator.json: build the berth_goldens target";
  const berth::data::TokenizedDataset dataset = dataset_of(g.at("features"));
  for (size_t multiple : {size_t{0}, size_t{8}}) {
    SCOPED_TRACE(multiple);
    berth::data::DataLoaderOptions options;
    options.batch_size = 3;
    options.shuffle = false;
    options.pad_token_id = g.at("pad_token_id").get<int64_t>();
    options.pad_to_multiple_of = multiple;
    const berth::data::DataLoader loader(dataset, options);
    size_t index = 0;
    for (const Batch& batch : loader) {
      ASSERT_LT(index, dataset.size() / 3);
      std::vector<size_t> rows = {3 * index, 3 * index + 1, 3 * index + 2};
      const Json* expected = nullptr;
      for (const Json& b : g.at("batches"))
        if (b.at("rows").get<std::vector<size_t>>() == rows && multiple_of(b) == multiple) expected = &b;
      ASSERT_NE(expected, nullptr) << "no golden batch for rows " << Json(rows).dump();
      expect_same_batch(batch, *expected);
      ++index;
    }
    EXPECT_EQ(index, 3u);
  }
}

}  // namespace
