// WordTagDataset: reading words and tags (names or ids), run_ner.py's label list and first-sub-token
// alignment, and the -100 padding of token labels per batch.
#include "berth/data/word_tag_dataset.h"
#include "berth/data/data_loader.h"
#include "berth/tokenizer/tokenizer_files.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {

std::string word_tag_file(const berth::testing::TempDir& dir, const std::string& text) {
  std::ofstream(dir.file("tags.jsonl")) << text;
  return dir.file("tags.jsonl");
}

TEST(WordTagDataset, LabelsAreTheSortedUniqueTagsOrTheModelsIds) {
  berth::testing::TempDir dir;
  const std::string path =
      word_tag_file(dir,
                    "{\"tokens\": [\"Zoe\", \"paid\"], \"ner_tags\": [\"B-PER\", \"O\"]}\n\n"
                    "{\"tokens\": [\"7\"], \"ner_tags\": [\"B-NUM\"]}\n");
  const auto dataset = berth::data::WordTagDataset::load(path);
  EXPECT_EQ(dataset.label_map().labels(), (std::vector<std::string>{"B-NUM", "B-PER", "O"}));
  ASSERT_EQ(dataset.size(), 2u);
  EXPECT_EQ(dataset.examples()[0].tags, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(dataset.examples()[1].line, 3u);

  berth::data::WordTagOptions fixed;
  fixed.label_map = berth::data::LabelMap({"O", "B-PER", "B-NUM"});
  const std::string ids = word_tag_file(dir, "{\"tokens\": [\"Zoe\", \"paid\"], \"ner_tags\": [1, 0]}\n");
  EXPECT_EQ(berth::data::WordTagDataset::load(ids, fixed).examples()[0].tags, (std::vector<int64_t>{1, 0}));
  berth::testing::expect_contains(berth::testing::error_text([&] { berth::data::WordTagDataset::load(ids); }),
                                  {"tags.jsonl:1", "integer tag 1", "Fix: write the tags as names"});
}

TEST(WordTagDataset, AlignsTheFirstSubTokenOfEachWord) {
  // [CLS] w0 w0 w1 [SEP]: later sub-tokens and special tokens get -100.
  EXPECT_EQ(berth::data::align_word_tags({-1, 0, 0, 1, -1}, {4, 2}),
            (std::vector<int64_t>{-100, 4, -100, 2, -100}));
  const auto tokenizer = berth::tokenizer::load_tokenizer(berth::testing::bert_base_uncased_dir());
  berth::data::WordTagDataset dataset({{{"unaffable", "Zoe", "paid"}, {0, 1, 0}, 1}, {{"hi"}, {1}, 2}},
                                      berth::data::LabelMap({"O", "B-PER"}));
  const auto encoded = berth::data::encode_word_tags(dataset, tokenizer, 5);  // [CLS] + 3 tokens + [SEP]
  ASSERT_EQ(encoded.encoding(0).size(), 5u);
  const at::Tensor labels = encoded.labels();  // (2, 5)
  ASSERT_EQ(labels.sizes(), (std::vector<int64_t>{2, 5}));
  // "unaffable" is un ##aff ##able: only its first piece is labelled, the truncation cut the rest.
  EXPECT_TRUE(torch::equal(labels[0], torch::tensor({-100, 0, -100, -100, -100}, at::kLong)));
  EXPECT_TRUE(torch::equal(labels[1], torch::tensor({-100, 1, -100, -100, -100}, at::kLong)));

  // Batches pad (and cut) labels with -100 to their own length, as DataCollatorForTokenClassification.
  const berth::Batch batch = berth::data::collate(encoded, {1}, 0, 0, berth::data::BatchLabels::TokenLabels);
  EXPECT_TRUE(torch::equal(batch.at("labels"), torch::tensor({{-100, 1, -100}}, at::kLong)));
  const berth::Batch padded = berth::data::collate(encoded, {1}, 0, 8, berth::data::BatchLabels::TokenLabels);
  EXPECT_EQ(padded.at("labels").size(1), 8);
  EXPECT_EQ(padded.at("labels")[0][7].item<int64_t>(), -100);
}

// (B, T) int64 from a JSON list of rows.
at::Tensor word_tag_rows(const nlohmann::json& rows) {
  std::vector<at::Tensor> out;
  for (const auto& row : rows) out.push_back(torch::tensor(row.get<std::vector<int64_t>>(), at::kLong));
  return at::stack(out);
}

TEST(WordTagDataset, BatchesEqualDataCollatorForTokenClassification) {
  std::ifstream in(berth::testing::golden_dir() + "/data/token_collator.json");
  ASSERT_TRUE(in.good()) << "missing golden data/token_collator.json";
  const nlohmann::json golden = nlohmann::json::parse(in);
  std::vector<berth::data::WordTagExample> examples;
  for (const auto& row : golden["rows"])
    examples.push_back(
        {row["words"].get<std::vector<std::string>>(), row["tags"].get<std::vector<int64_t>>(), 0});
  const berth::data::WordTagDataset dataset(examples,
                                            berth::data::LabelMap({"O", "B-A", "I-A", "B-B", "I-B"}));
  const auto tokenizer = berth::tokenizer::load_tokenizer(berth::testing::bert_base_uncased_dir());
  const auto encoded = berth::data::encode_word_tags(dataset, tokenizer, golden["max_length"].get<size_t>());
  ASSERT_EQ(golden["batches"].size(), 4u);
  for (const auto& expected : golden["batches"]) {
    const berth::Batch batch = berth::data::collate(
        encoded, expected["rows"].get<std::vector<size_t>>(), tokenizer.pad_token_id(),
        expected["pad_to_multiple_of"].get<size_t>(), berth::data::BatchLabels::TokenLabels);
    for (const char* name : {"input_ids", "attention_mask", "labels"})
      EXPECT_TRUE(torch::equal(batch.at(name), word_tag_rows(expected[name])))
          << name << " of rows " << expected["rows"];
  }
}

TEST(WordTagDataset, RefusesRowsThatDoNotFit) {
  berth::testing::TempDir dir;
  const auto message = [&](const std::string& text) {
    const std::string path = word_tag_file(dir, text);
    return berth::testing::error_text([&] { berth::data::WordTagDataset::load(path); });
  };
  berth::testing::expect_contains(
      message("{\"tokens\": [\"a\", \"b\"], \"ner_tags\": [\"O\"]}\n"),
      {"tags.jsonl:1", "1 tags", "for 2 words", "Fix: give exactly one tag per word"});
  berth::testing::expect_contains(message("{\"tokens\": \"a b\", \"ner_tags\": [\"O\", \"O\"]}\n"),
                                  {"tags.jsonl:1", "\"tokens\" must be a list", "Fix: pre-split"});
  berth::testing::expect_contains(message("{\"words\": [\"a\"], \"ner_tags\": [\"O\"]}\n"),
                                  {"missing \"tokens\"", "found keys: ner_tags, words"});
}

}  // namespace
