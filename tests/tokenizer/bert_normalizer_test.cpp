// BertNormalizer against HF tokenizers for every code point, and the alignments of normalized characters.
#include "berth/tokenizer/bert_normalizer.h"

#include <gtest/gtest.h>

#include <unordered_map>

#include "support/test_support.h"
#include "support/tokenizer_goldens.h"

namespace {

using berth::tokenizer::BertNormalizer;
using berth::tokenizer::BertNormalizerOptions;
using berth::tokenizer::NormalizedText;

std::string bert_normalizer_utf8(char32_t cp) { return berth::testing::encode_utf8(cp); }

// tokenizer_codepoints.jsonl lists every code point the default (uncased) or the cased BertNormalizer
// changes; all others must come out unchanged.
TEST(BertNormalizerGolden, EveryCodePointAsHfTokenizers) {
  std::unordered_map<char32_t, std::pair<std::string, std::string>> changed;
  for (const auto& line :
       berth::testing::read_jsonl(berth::testing::golden_dir() + "/tokenizer_codepoints.jsonl"))
    changed[line["cp"].get<char32_t>()] = {line["uncased"].get<std::string>(),
                                           line["cased"].get<std::string>()};
  ASSERT_GT(changed.size(), 100000u);  // private use areas alone are deleted by clean_text
  BertNormalizerOptions cased_options;
  cased_options.lowercase = false;
  const BertNormalizer uncased, cased(cased_options);
  size_t mismatches = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::string ch = bert_normalizer_utf8(cp);
    auto it = changed.find(cp);
    const std::string& want_uncased = it == changed.end() ? ch : it->second.first;
    const std::string& want_cased = it == changed.end() ? ch : it->second.second;
    const std::string got_uncased = uncased.normalize(ch).text, got_cased = cased.normalize(ch).text;
    if (got_uncased != want_uncased || got_cased != want_cased) {
      ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(cp) << ": uncased berth '" << got_uncased
                    << "' HF '" << want_uncased << "'; cased berth '" << got_cased << "' HF '" << want_cased
                    << "'";
      if (++mismatches == 20) return;
    }
  }
}

TEST(BertNormalizer, AlignsEveryCharacterToItsOrigin) {
  const BertNormalizer n;
  // é decomposes and loses its accent; 中 gets spaces, all three from the ideograph; \x01 disappears.
  NormalizedText out = n.normalize("\xC3\xA9\xE4\xB8\xAD\x01Z");
  EXPECT_EQ(out.text, "e \xE4\xB8\xAD z");
  EXPECT_EQ(out.origin, (std::vector<uint32_t>{0, 1, 1, 1, 3}));
}

TEST(BertNormalizer, StripAccentsFollowsLowercaseWhenUnset) {
  BertNormalizerOptions cased;
  cased.lowercase = false;
  EXPECT_FALSE(BertNormalizer(cased).strips_accents());
  EXPECT_TRUE(BertNormalizer().strips_accents());
  cased.strip_accents = true;
  EXPECT_EQ(BertNormalizer(cased).normalize("Caf\xC3\xA9").text, "Cafe");
}

TEST(BertNormalizer, LowercasesPerCharacterWithoutFinalSigma) {
  // HF lowercases character by character: a word-final Σ becomes σ, not ς.
  BertNormalizerOptions keep_accents;
  keep_accents.strip_accents = false;
  EXPECT_EQ(BertNormalizer(keep_accents).normalize("\xCE\xA3\xCE\xA3").text, "\xCF\x83\xCF\x83");
}

TEST(BertNormalizer, CanonicalReorderingKeepsHfAlignment) {
  // a + acute (230) + dot below (220): NFD swaps the marks; both are stripped, 'b' keeps its origin.
  NormalizedText out = BertNormalizer().normalize(
      "a\xCC\x81\xCC\xA3"
      "b");
  EXPECT_EQ(out.text, "ab");
  EXPECT_EQ(out.origin, (std::vector<uint32_t>{0, 3}));
}

TEST(BertNormalizer, InvalidUtf8NamesTheByte) {
  std::string text = berth::testing::error_text([] { BertNormalizer().normalize("abc\xE2\x82"); });
  berth::testing::expect_contains(text, {"not valid UTF-8", "0xE2", "byte offset 3", "cut short"});
}

}  // namespace
