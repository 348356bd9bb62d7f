// run_qa.py's preprocessing against HF (goldens from tests/goldens/question_answering_goldens.py): the same
// SQuAD-style examples (answers at window edges, cut by a window, several windows, unicode text, SpamAssassin
// emails, an unanswerable question) cut by HF's fast tokenizers and by berth into the same windows:
// input_ids, token_type_ids, attention_mask, start/end positions, example index and context offsets, for
// WordPiece (bert-base-uncased) and byte-level BPE (RoBERTa's special tokens), padded and unpadded.
#include "berth/data/question_answering_features.h"

#include "berth/tokenizer/tokenizer_files.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace berth {
namespace {

std::string qa_features_dir() { return testing::golden_dir() + "/question_answering"; }

nlohmann::json qa_features_golden(const std::string& name) {
  std::ifstream in(qa_features_dir() + "/features_" + name + ".json");
  EXPECT_TRUE(in.good()) << "no golden " << name << ": build the berth_goldens target";
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
}

tokenizer::Tokenizer qa_features_tokenizer(const std::string& name) {
  return tokenizer::load_tokenizer(name == "bert" ? testing::bert_base_uncased_dir()
                                                  : qa_features_dir() + "/roberta_tokenizer");
}

void qa_features_expect_row(const data::QuestionAnsweringFeatures& features, size_t row,
                            const nlohmann::json& want) {
  const tokenizer::Encoding& e = features.dataset->encoding(row);
  EXPECT_EQ(e.ids, want.at("input_ids").get<std::vector<int64_t>>()) << "window " << row;
  EXPECT_EQ(e.type_ids, want.at("token_type_ids").get<std::vector<int64_t>>()) << "window " << row;
  EXPECT_EQ(e.attention_mask, want.at("attention_mask").get<std::vector<int64_t>>()) << "window " << row;
  const at::Tensor labels = features.dataset->labels();
  EXPECT_EQ(labels[static_cast<int64_t>(row)][0].item<int64_t>(), want.at("start_position").get<int64_t>())
      << "window " << row;
  EXPECT_EQ(labels[static_cast<int64_t>(row)][1].item<int64_t>(), want.at("end_position").get<int64_t>())
      << "window " << row;
  EXPECT_EQ(features.example_index[row], want.at("example_index").get<size_t>()) << "window " << row;
  std::vector<std::pair<int64_t, int64_t>> offsets;
  for (const auto& o : want.at("offsets"))
    offsets.emplace_back(o.is_null() ? -1 : o[0].get<int64_t>(), o.is_null() ? -1 : o[1].get<int64_t>());
  EXPECT_EQ(features.context_offsets[row], offsets) << "window " << row;
}

class QuestionAnsweringFeatures : public ::testing::TestWithParam<std::string> {};

TEST_P(QuestionAnsweringFeatures, EqualRunQaWithHfTokenizers) {
  const nlohmann::json golden = qa_features_golden(GetParam());
  ASSERT_FALSE(golden.is_null());
  const auto examples =
      data::load_question_answering_examples(qa_features_dir() + "/examples.jsonl", {}, /*labeled=*/true);
  data::QuestionAnsweringFeatureOptions options;
  options.max_length = golden.at("max_length").get<size_t>();
  options.doc_stride = golden.at("doc_stride").get<size_t>();
  options.pad_to_max_length = golden.at("pad").get<bool>();
  const auto features = data::prepare_question_answering_features(
      examples, qa_features_tokenizer(golden.at("tokenizer").get<std::string>()), options, /*labeled=*/true);
  const nlohmann::json& want = golden.at("features");
  ASSERT_EQ(features.dataset->size(), want.size());
  ASSERT_EQ(features.dataset->labels().sizes(), (at::IntArrayRef{static_cast<int64_t>(want.size()), 2}));
  for (size_t row = 0; row < want.size(); ++row) qa_features_expect_row(features, row, want[row]);
  // The cases hold what they are for: several windows per example, answers outside a window (CLS) and in one.
  size_t outside = 0;
  for (const auto& f : want) outside += f.at("start_position").get<int64_t>() == 0;
  EXPECT_GT(want.size(), examples.size());
  EXPECT_GT(outside, 0u);
  EXPECT_LT(outside, want.size());
}

INSTANTIATE_TEST_SUITE_P(Cases, QuestionAnsweringFeatures,
                         ::testing::Values("bert_48", "bert_64_unpadded", "roberta_48", "bert_384"));

TEST(QuestionAnsweringFeatureChecks, RefusesAStrideThatDoesNotFit) {
  const auto examples =
      data::load_question_answering_examples(qa_features_dir() + "/examples.jsonl", {}, /*labeled=*/true);
  data::QuestionAnsweringFeatureOptions options;
  options.max_length = 32;
  options.doc_stride = 32;
  const std::string message = testing::error_text([&] {
    data::prepare_question_answering_features(examples, qa_features_tokenizer("bert"), options, true);
  });
  testing::expect_contains(message, {"--doc-stride 32", "Fix: lower --doc-stride"});
}

}  // namespace
}  // namespace berth
