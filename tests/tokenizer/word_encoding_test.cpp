// Tokenizer::encode_words against transformers' tokenizer(words, is_split_into_words=True)
// (tests/goldens/word_tokenizer_goldens.py): ids, word_ids and per-word offsets for BERT and two byte-level
// BPE pipelines, untruncated and truncated to 8 tokens.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "berth/tokenizer/tokenizer.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "support/tokenizer_goldens.h"

namespace {

std::string word_golden_dir(const std::string& name) {
  return berth::testing::golden_dir() + "/word_tokenizers/" + name;
}

class WordEncoding : public ::testing::TestWithParam<std::string> {};

TEST_P(WordEncoding, IdsWordIdsAndOffsetsMatchTransformers) {
  const std::string dir = word_golden_dir(GetParam());
  const auto cases = berth::testing::read_jsonl(dir + "/expected.jsonl");
  ASSERT_GE(cases.size(), 100u);
  berth::tokenizer::Tokenizer tokenizer = berth::tokenizer::load_tokenizer(dir);
  size_t truncated = 0;
  for (const auto& golden : cases) {
    const auto words = golden["words"].get<std::vector<std::string>>();
    std::optional<berth::tokenizer::TruncationOptions> truncation;
    if (!golden["max_length"].is_null()) {
      truncation = berth::tokenizer::TruncationOptions{};
      truncation->max_length = golden["max_length"].get<size_t>();
    }
    tokenizer.set_truncation(truncation);
    const berth::tokenizer::Encoding encoding = tokenizer.encode_words(words);
    const std::string diff = berth::testing::encoding_difference(encoding, golden);
    EXPECT_EQ(diff, "") << golden["words"].dump();
    EXPECT_EQ(encoding.word_ids, golden["word_ids"].get<std::vector<int64_t>>()) << golden["words"].dump();
    if (truncation && encoding.size() == truncation->max_length) ++truncated;
  }
  EXPECT_GT(truncated, 10u);  // the truncated cases do cut words
}

INSTANTIATE_TEST_SUITE_P(Goldens, WordEncoding, ::testing::Values("bert-base-uncased", "roberta", "gpt2"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// Plain text's words are the pre-tokenizer's splits (HF's numbering, compared on every golden family in
// tokenizer_test.cpp); padding and special tokens are -1 in both kinds of input.
TEST(WordEncoding, PlainTextWordsAreThePreTokenizersSplits) {
  const auto tokenizer = berth::tokenizer::load_tokenizer(word_golden_dir("bert-base-uncased"));
  EXPECT_EQ(tokenizer.encode("two words").word_ids, (std::vector<int64_t>{-1, 0, 1, -1}));
  const auto padded = [&] {
    berth::tokenizer::Tokenizer t = tokenizer;
    berth::tokenizer::PaddingOptions padding;
    padding.strategy = berth::tokenizer::PaddingStrategy::MaxLength;
    padding.max_length = 6;
    t.set_padding(padding);
    return t.encode_words({"two", "words"});
  }();
  EXPECT_EQ(padded.word_ids, (std::vector<int64_t>{-1, 0, 1, -1, -1, -1}));
}

}  // namespace
