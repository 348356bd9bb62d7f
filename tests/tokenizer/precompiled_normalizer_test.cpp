// The Precompiled normalizer (SentencePiece's real nmt_nfkc charsmap) against HF tokenizers: every code
// point, every two-code-point string that shows a grapheme cluster, every case and email (with each
// normalized code point's original range), XLM-R's Precompiled + Replace; and what berth says about a broken
// charsmap.
#include <gtest/gtest.h>

#include "berth/tokenizer/component_json.h"
#include "support/normalizer_goldens.h"

namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;
using namespace berth::tokenizer;

TEST(PrecompiledNormalizerGolden, EveryCodePoint) {
  // nmt_nfkc maps thousands of code points (NFKC, controls removed, spaces unified).
  EXPECT_EQ(berth::testing::code_point_mismatches("precompiled", 5000), 0u);
}

// A cluster under 6 bytes is looked up whole and takes its first mapped prefix's replacement, so whether two
// code points form a cluster shows in the output. Every code point after "a" and U+00AA, before "a" and
// before U+0301 (BMP for the 2-byte ones) must cluster as in HF, and so must a few longer clusters (GB9c,
// emoji ZWJ, regional indicators).
TEST(PrecompiledNormalizerGolden, GraphemeClustersOfEveryCodePoint) {
  const auto normalizer = berth::testing::golden_normalizer("precompiled");
  ASSERT_TRUE(normalizer);
  const auto single = berth::testing::golden_code_points("precompiled");
  const auto hf_single = [&](const std::string& s, char32_t cp) {
    const auto it = single.find(cp);
    return it == single.end() ? s : it->second;
  };
  std::map<std::string, std::string> listed;
  for (const auto& line :
       berth::testing::read_jsonl(berth::testing::unigram_golden_dir() + "/normalizer_pairs.jsonl"))
    listed[line["text"].get<std::string>()] = line["out"].get<std::string>();
  EXPECT_GT(listed.size(), 1000u);  // composition with "a", marks after U+00AA dropped, ...
  size_t compared = 0, mismatches = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::string c = berth::testing::encode_utf8(cp);
    std::vector<std::pair<char32_t, char32_t>> pairs{{U'a', cp}, {cp, U'a'}};
    if (cp < 0x10000) pairs.insert(pairs.end(), {{0xAA, cp}, {cp, 0x301}});
    for (const auto& [left, right] : pairs) {
      const std::string l = berth::testing::encode_utf8(left), r = berth::testing::encode_utf8(right);
      const auto it = listed.find(l + r);
      const std::string want = it != listed.end() ? it->second : hf_single(l, left) + hf_single(r, right);
      const std::string got = berth::testing::normalize_utf8(*normalizer, l + r);
      ++compared;
      if (got != want && ++mismatches <= 20)
        ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(left) << " U+"
                      << static_cast<uint32_t>(right) << ": berth " << nlohmann::json(got).dump() << ", HF "
                      << nlohmann::json(want).dump();
    }
  }
  for (const auto& [text, want] : listed) {  // the longer clusters too
    const std::string got = berth::testing::normalize_utf8(*normalizer, text);
    if (got != want && ++mismatches <= 40)
      ADD_FAILURE() << nlohmann::json(text).dump() << ": berth " << nlohmann::json(got).dump() << ", HF "
                    << nlohmann::json(want).dump();
  }
  EXPECT_EQ(mismatches, 0u) << "of " << compared + listed.size();
}

TEST(PrecompiledNormalizerGolden, EveryCaseAndEmailWithAlignments) {
  EXPECT_GT(berth::testing::check_normalized_texts("precompiled"), 6000u);
}

TEST(PrecompiledNormalizerGolden, XlmRobertasPrecompiledThenReplace) {
  EXPECT_GT(berth::testing::check_normalized_texts("xlmr"), 6000u);
}

TEST(PrecompiledNormalizer, AnEmptyCharsmapChangesNothing) {
  // HF cannot load an empty charsmap at all (it panics); berth reads it as a normalizer that maps nothing.
  for (const char* charsmap : {"", "AAAAAA=="}) {
    const auto normalizer = normalizer_from_json(
        std::string(R"({"type": "Precompiled", "precompiled_charsmap": ")") + charsmap + "\"}");
    AlignedText text = AlignedText::from_utf8("\xEF\xAC\x81 a\r\n");  // U+FB01 (fi), which nmt_nfkc maps
    normalizer->normalize(text);
    EXPECT_EQ(text.utf8(), "\xEF\xAC\x81 a\r\n");
  }
}

TEST(PrecompiledNormalizer, RefusesBadBase64AndBrokenCharsmapsWithTheJsonPath) {
  const auto parse = [](const std::string& charsmap) {
    return error_text([&] {
      normalizer_from_json(
          R"({"type": "Sequence", "normalizers": [{"type": "Precompiled", "precompiled_charsmap": ")" +
          charsmap + "\"}]}");
    });
  };
  expect_contains(parse("AAA"), {"normalizer.normalizers[0].precompiled_charsmap", "not valid base64",
                                 "not a multiple of 4", "Fix:"});
  expect_contains(parse("AA*A"), {"precompiled_charsmap", "outside the alphabet", "character 2"});
  expect_contains(parse("A=AA"), {"precompiled_charsmap", "'=' before the end", "character 1"});
  expect_contains(parse("AB=="), {"precompiled_charsmap", "non-zero bits"});
  expect_contains(parse("AAA="), {"precompiled_charsmap", "too short", "Fix:"});  // 2 bytes
  expect_contains(parse("CAAAAAAAAAA="), {"precompiled_charsmap", "the trie is 2 units but only 1 follow"});
  expect_contains(parse("AAAAAP8="), {"precompiled_charsmap", "replacements are not UTF-8", "byte 0"});
  expect_contains(error_text([] { normalizer_from_json(R"({"type": "Precompiled"})"); }),
                  {"normalizer.precompiled_charsmap", "missing"});
  expect_contains(
      error_text([] { normalizer_from_json(R"({"type": "Precompiled", "precompiled_charsmap": 3})"); }),
      {"normalizer.precompiled_charsmap", "unexpected number"});
}

TEST(PrecompiledNormalizer, ATrieThatPointsOutsideItselfIsAnErrorNotACrash) {
  // One unit whose offset leads far past the trie: looking up any byte would read outside it (HF panics when
  // it first normalizes; berth looks ASCII up as it loads).
  expect_contains(
      error_text(
          [] { normalizer_from_json(R"({"type": "Precompiled", "precompiled_charsmap": "BAAAAAD8//8="})"); }),
      {"normalizer.precompiled_charsmap", "points at unit 4194302 of 1", "Fix:"});
}

}  // namespace
