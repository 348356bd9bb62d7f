// BertNormalizer as a tokenizer.json normalizer against HF tokenizers, in four settings: every code point,
// every case and email, each normalized code point's original range; and what berth says about bad JSON.
#include <gtest/gtest.h>

#include "berth/tokenizer/component_json.h"
#include "support/normalizer_goldens.h"

namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;
using namespace berth::tokenizer;

class BertPipelineNormalizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(BertPipelineNormalizerGolden, EveryCodePoint) {
  // Even without clean_text, lowercase or accents, CJK ideographs gain spaces; private use areas alone are
  // deleted under clean_text.
  EXPECT_EQ(berth::testing::code_point_mismatches(GetParam(), GetParam() == "bert-strip-only" ? 500 : 1000),
            0u);
}

TEST_P(BertPipelineNormalizerGolden, EveryCaseAndEmailWithAlignments) {
  EXPECT_GT(berth::testing::check_normalized_texts(GetParam()), 6000u);
}

INSTANTIATE_TEST_SUITE_P(Settings, BertPipelineNormalizerGolden,
                         ::testing::Values("bert-uncased", "bert-cased", "bert-strip-only",
                                           "bert-lowercase-keep-accents"));

TEST(BertPipelineNormalizer, AlignsEachCodePointWithTheOneItCameFrom) {
  // After a Prepend, the inserted code point's range is the first one's: BertNormalizer keeps every range.
  const auto normalizer = normalizer_from_json(
      R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "X"},
          {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null,
           "lowercase": true}]})");
  AlignedText text = AlignedText::from_utf8("\xC3\x89\xE4\xB8\xAD\x01Z");  // É 中 \x01 Z
  normalizer->normalize(text);
  EXPECT_EQ(text.utf8(), "xe \xE4\xB8\xAD z");
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (const auto& ch : text.chars) ranges.emplace_back(ch.begin, ch.end);
  EXPECT_EQ(ranges,
            (std::vector<std::pair<uint32_t, uint32_t>>{{0, 1}, {0, 1}, {1, 2}, {1, 2}, {1, 2}, {3, 4}}));
}

TEST(BertPipelineNormalizer, RefusesMissingOrMistypedFieldsWithTheJsonPath) {
  expect_contains(error_text([] {
                    normalizer_from_json(R"({"type": "BertNormalizer", "clean_text": true,
                                             "handle_chinese_chars": true, "strip_accents": null})");
                  }),
                  {"normalizer.lowercase", "missing", "Fix:"});
  expect_contains(error_text([] {
                    normalizer_from_json(R"({"type": "BertNormalizer", "clean_text": "yes",
                                             "handle_chinese_chars": true, "lowercase": true})");
                  }),
                  {"normalizer.clean_text", "unexpected string"});
  expect_contains(error_text([] {
                    normalizer_from_json(R"({"type": "BertNormalizer", "clean_text": true,
                                             "handle_chinese_chars": true, "strip_accents": 1, "lowercase": true})");
                  }),
                  {"normalizer.strip_accents", "unexpected number"});
  expect_contains(
      error_text([] { normalizer_from_json(R"({"type": "Bart"})"); }),
      {"normalizer.type", "\"Bart\"", "is not a normalizer berth knows", "BertNormalizer", "Precompiled"});
}

}  // namespace
