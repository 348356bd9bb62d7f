// mask_tokens against HF's DataCollatorForLanguageModeling(mlm=True) with the same seeded generator
// (tests/goldens/data_collator_goldens.py), and the DataLoader's masked-LM batches.
#include "berth/data/mask_tokens.h"

#include "berth/data/data_loader.h"
#include "berth/data/pack_blocks.h"

#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <fstream>

namespace berth::data {
namespace {

using Json = nlohmann::json;

Json mask_tokens_golden() {
  std::ifstream in(berth::testing::golden_dir() + "/data/data_collator.json");
  return in.good() ? Json::parse(in).at("mlm") : Json();
}

// Nested lists of unequal lengths -> (B, longest), padded with `pad`.
at::Tensor mask_tokens_padded(const Json& rows, int64_t pad) {
  size_t longest = 0;
  for (const Json& row : rows) longest = std::max(longest, row.size());
  at::Tensor out =
      at::full({static_cast<int64_t>(rows.size()), static_cast<int64_t>(longest)}, pad, at::kLong);
  for (size_t b = 0; b < rows.size(); ++b)
    for (size_t t = 0; t < rows[b].size(); ++t)
      out[static_cast<int64_t>(b)][static_cast<int64_t>(t)] = rows[b][t].get<int64_t>();
  return out;
}

TEST(MaskTokens, MatchesHfsCollatorDrawForDraw) {
  const Json g = mask_tokens_golden();
  ASSERT_TRUE(g.is_object()) << "missing golden data/data_collator.json: build the berth_goldens target";
  std::ifstream in(berth::testing::golden_dir() + "/data/data_collator.json");
  const Json features = Json::parse(in).at("features");
  std::vector<std::vector<int64_t>> ids;
  for (const Json& f : features) ids.push_back(f.at("input_ids").get<std::vector<int64_t>>());
  const at::Tensor input_ids = mask_tokens_padded(Json(ids), 0);
  ASSERT_EQ(g.at("settings").size(), 3u);
  for (const Json& setting : g.at("settings")) {
    SCOPED_TRACE(setting.at("mlm_probability").dump());
    MaskTokensOptions options;
    options.mlm_probability = setting.at("mlm_probability").get<double>();
    options.mask_replace_prob = setting.at("mask_replace_prob").get<double>();
    options.random_replace_prob = setting.at("random_replace_prob").get<double>();
    options.mask_token_id = g.at("mask_token_id").get<int64_t>();
    options.vocab_size = g.at("vocab_size").get<int64_t>();
    auto generator = at::make_generator<at::CPUGeneratorImpl>(setting.at("seed").get<uint64_t>());
    const MaskedTokens masked =
        mask_tokens(input_ids, mask_tokens_padded(setting.at("special_tokens_mask"), 1), options, generator);
    const at::Tensor expected_labels = mask_tokens_padded(setting.at("labels"), -100);
    EXPECT_TRUE(masked.input_ids.equal(mask_tokens_padded(setting.at("input_ids"), 0)));
    EXPECT_TRUE(masked.labels.equal(expected_labels));
    EXPECT_GT((expected_labels != -100).sum().item<int64_t>(), 0);  // something was masked
  }
}

// (B, T, 2) from nested [[start, end], ...] rows of equal length.
at::Tensor mask_tokens_offsets(const Json& rows) {
  std::vector<int64_t> flat;
  for (const Json& row : rows)
    for (const Json& pair : row) flat.insert(flat.end(), {pair[0].get<int64_t>(), pair[1].get<int64_t>()});
  const auto b = static_cast<int64_t>(rows.size());
  return at::tensor(flat, at::kLong).reshape({b, -1, 2});
}

// HF's whole_word_mask=True: words from touching offsets, every token of a drawn word masked, all of them
// as the mask token (HF overrides the 80/10/10 split, and so does berth).
TEST(MaskTokens, WholeWordMaskingMatchesHfsCollatorDrawForDraw) {
  const Json g = mask_tokens_golden();
  ASSERT_TRUE(g.is_object() && g.contains("whole_word")) << "missing golden: build the berth_goldens target";
  ASSERT_EQ(g.at("whole_word").size(), 3u);
  for (const Json& setting : g.at("whole_word")) {
    SCOPED_TRACE(setting.at("mlm_probability").dump());
    MaskTokensOptions options;
    options.mlm_probability = setting.at("mlm_probability").get<double>();
    options.whole_word_mask = true;
    options.mask_token_id = g.at("mask_token_id").get<int64_t>();
    options.vocab_size = g.at("vocab_size").get<int64_t>();
    auto generator = at::make_generator<at::CPUGeneratorImpl>(setting.at("seed").get<uint64_t>());
    const MaskedTokens masked = mask_tokens(mask_tokens_padded(setting.at("rows"), 0),
                                            mask_tokens_padded(setting.at("special_tokens_mask"), 1), options,
                                            generator, mask_tokens_offsets(setting.at("offsets")));
    const at::Tensor expected_labels = mask_tokens_padded(setting.at("labels"), -100);
    EXPECT_TRUE(masked.input_ids.equal(mask_tokens_padded(setting.at("input_ids"), 0)));
    EXPECT_TRUE(masked.labels.equal(expected_labels));
    EXPECT_GT((expected_labels != -100).sum().item<int64_t>(), 0);
  }
}

TEST(MaskTokens, RefusesBadOptionsNamingThem) {
  const at::Tensor ids = at::ones({1, 4}, at::kLong);
  const at::Tensor special = at::zeros({1, 4}, at::kLong);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(1);
  MaskTokensOptions options;
  options.vocab_size = 10;
  berth::testing::expect_contains(
      berth::testing::error_text([&] { mask_tokens(ids, special, options, generator); }),
      {"the tokenizer has no mask token", "Fix:", "--task causal-lm"});
  options.mask_token_id = 3;
  options.mlm_probability = 1.5;
  berth::testing::expect_contains(
      berth::testing::error_text([&] { mask_tokens(ids, special, options, generator); }),
      {"mlm_probability is 1.5", "[0, 1]"});
}

// Rows 3..9 tokens long, [CLS]=1 ... [SEP]=2 with special_tokens_mask, ids 5.. in between.
TokenizedDataset mask_tokens_rows() {
  std::vector<tokenizer::Encoding> encodings(12);
  for (size_t row = 0; row < encodings.size(); ++row) {
    auto& e = encodings[row];
    e.ids.push_back(1);
    for (size_t t = 0; t < 1 + row % 7; ++t) e.ids.push_back(static_cast<int64_t>(5 + (row + t) % 20));
    e.ids.push_back(2);
    e.special_tokens_mask.assign(e.ids.size(), 0);
    e.special_tokens_mask.front() = e.special_tokens_mask.back() = 1;
  }
  return TokenizedDataset(std::move(encodings), at::Tensor());
}

TEST(MaskTokens, LoaderMasksOnlyTextTokensReproduciblyPerEpoch) {
  const TokenizedDataset dataset = mask_tokens_rows();
  DataLoaderOptions options;
  options.batch_size = 4;
  options.seed = 9;
  options.shuffle = false;  // batch k holds rows 4k..4k+3
  options.labels = BatchLabels::MaskedTokens;
  options.mlm.mlm_probability = 0.5;
  options.mlm.mask_token_id = 4;
  options.mlm.vocab_size = 30;
  auto epoch_batches = [&](uint64_t epoch, size_t prefetch) {
    options.prefetch = prefetch;
    DataLoader loader(dataset, options);
    loader.set_epoch(epoch);
    std::vector<Batch> out;
    for (const Batch& batch : loader) out.push_back(batch);
    return out;
  };
  const auto first = epoch_batches(0, 0);
  const auto again = epoch_batches(0, 2);  // prefetched on another thread: the same masks
  const auto next = epoch_batches(1, 0);
  int64_t masked = 0;
  bool epochs_differ = false;
  for (size_t k = 0; k < first.size(); ++k) {
    const at::Tensor labels = first[k].at("labels");
    const at::Tensor ids = first[k].at("input_ids");
    EXPECT_TRUE(labels.equal(again[k].at("labels")));
    EXPECT_TRUE(ids.equal(again[k].at("input_ids")));
    const at::Tensor special = (labels == 1) | (labels == 2) | (labels == 0);
    EXPECT_FALSE(special.any().item<bool>()) << "a special token or padding was masked";
    const at::Tensor kept = labels == -100;
    const at::Tensor plain = collate(dataset, {4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3}, 0).at("input_ids");
    EXPECT_TRUE(ids.masked_select(kept).equal(plain.masked_select(kept))) << "an unmasked token changed";
    EXPECT_TRUE(labels.masked_select(~kept).equal(plain.masked_select(~kept)))
        << "labels are the original ids";
    masked += (~kept).sum().item<int64_t>();
    epochs_differ = epochs_differ || !labels.equal(next[k].at("labels"));
  }
  EXPECT_GT(masked, 0);
  EXPECT_TRUE(epochs_differ);
}

// Rows of two-token words: tokens 2w and 2w + 1 touch ([10w, 10w + 3), [10w + 3, 10w + 6)), words do not.
TokenizedDataset mask_tokens_word_rows() {
  std::vector<tokenizer::Encoding> encodings(8);
  for (size_t row = 0; row < encodings.size(); ++row) {
    auto& e = encodings[row];
    e.ids.push_back(1);
    e.offsets.emplace_back(0, 0);
    for (size_t t = 0; t < 2 * (2 + row % 4); ++t) {
      e.ids.push_back(static_cast<int64_t>(5 + (row + t) % 20));
      const size_t start = 10 * (t / 2) + 3 * (t % 2);
      e.offsets.emplace_back(start, start + 3);
    }
    e.ids.push_back(2);
    e.offsets.emplace_back(0, 0);
    e.special_tokens_mask.assign(e.ids.size(), 0);
    e.special_tokens_mask.front() = e.special_tokens_mask.back() = 1;
  }
  return TokenizedDataset(std::move(encodings), at::Tensor());
}

// The loader hands the rows' offsets to whole-word masking (and pack_blocks keeps them): both tokens of a
// word are masked together, always as the mask token.
TEST(MaskTokens, LoaderMasksWholeWordsFromTheRowsOffsets) {
  const TokenizedDataset rows = mask_tokens_word_rows();
  DataLoaderOptions options;
  options.batch_size = 4;
  options.shuffle = false;
  options.labels = BatchLabels::MaskedTokens;
  options.mlm = {0.4, 0.8, 0.1, 4, 30, true};
  int64_t masked = 0;
  for (const Batch& batch : DataLoader(rows, options)) {
    const at::Tensor chosen = batch.at("labels") != -100;
    const at::Tensor words = chosen.narrow(1, 1, chosen.size(1) - 1);  // skip [CLS]: words start at 1
    const int64_t pairs = words.size(1) / 2;
    const at::Tensor first = words.narrow(1, 0, 2 * pairs).reshape({words.size(0), pairs, 2}).select(2, 0);
    const at::Tensor second = words.narrow(1, 0, 2 * pairs).reshape({words.size(0), pairs, 2}).select(2, 1);
    EXPECT_TRUE(first.equal(second)) << "a word was masked in part";
    EXPECT_TRUE(batch.at("input_ids").masked_select(chosen).eq(4).all().item<bool>());
    masked += chosen.sum().item<int64_t>();
  }
  EXPECT_GT(masked, 0);
  const TokenizedDataset packed = pack_blocks(rows, 6);
  ASSERT_EQ(packed.encoding(0).offsets.size(), 6u);
  EXPECT_EQ(packed.encoding(0).offsets[2], rows.encoding(0).offsets[2]);
}

}  // namespace
}  // namespace berth::data
