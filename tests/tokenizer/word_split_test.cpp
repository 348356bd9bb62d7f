// The scans of GPT-2's, Llama 3's and Qwen2's split patterns against Oniguruma running the patterns
// themselves: every code point in the contexts that tell its classes apart, contractions in every case, and
// every case of tokenizer_cases.jsonl.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "berth/tokenizer/pattern_matches.h"
#include "support/test_support.h"
#include "support/tokenizer_goldens.h"

namespace {

using berth::tokenizer::pattern_matches;

std::string utf8(const std::u32string& text) {
  std::string out;
  for (char32_t c : text) out += berth::testing::encode_utf8(c);
  return out;
}

const char* kPatterns[] = {
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
};

// "" when the scan and Oniguruma cut text the same way; else where they part.
std::string difference(const char* pattern, const std::u32string& text) {
  const std::string bytes = utf8(text);
  const auto a = pattern_matches(pattern, bytes), b = pattern_matches(pattern, bytes, false);
  if (a == b) return "";
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const size_t at = i < b.size() ? b[i].first : i < a.size() ? a[i].first : 0;
  std::string context;
  for (size_t k = at; k < std::min(text.size(), at + 8); ++k) context += "U+" + std::to_string(text[k]) + " ";
  return "match " + std::to_string(i) + " at code point " + std::to_string(at) + " (" + context + ")";
}

TEST(WordSplit, EveryCodePointInEveryContextMatchesOniguruma) {
  // Around each code point: a letter, a digit, a space before a letter, an apostrophe, line breaks, tabs
  // and itself repeated, so that its \p{L}, \p{N} and \s membership all show.
  for (const char* pattern : kPatterns) {
    size_t failures = 0;
    // Planes 4 to 13 hold no assigned code point: one block of them stands for the rest.
    for (char32_t first = 0; first < 0x110000 && failures < 3; first += first == 0x40000 ? 0xA0000 : 2048) {
      std::u32string text;
      for (char32_t c = first; c < first + 2048 && c < 0x110000; ++c) {
        if (c >= 0xD800 && c <= 0xDFFF) continue;
        text += U"a";
        text += c;
        text += U"1 ";
        text += c;
        text += c;
        text += U"'";
        text += c;
        text += U" \n";
        text += c;
        text += U"\t ";
        text += c;
        text += U"  ";
      }
      const std::string diff = difference(pattern, text);
      if (!diff.empty() && ++failures <= 3)
        ADD_FAILURE() << pattern << ", code points from " << static_cast<uint32_t>(first) << ": " << diff;
    }
  }
}

TEST(WordSplit, ContractionsInEveryCaseAndSpacingMatchOniguruma) {
  std::u32string text;
  for (const char32_t* word : {U"s", U"S", U"\u017F", U"t",  U"T",  U"re", U"RE", U"rE", U"ve", U"Ve",
                               U"m", U"M", U"ll",     U"LL", U"lL", U"d",  U"D",  U"x",  U"r",  U"l"})
    for (const char32_t* around : {U"", U" ", U"a", U"1", U"\n", U"  "})
      text += std::u32string(U"it'") + word + around + U"'" + word + U"'";
  text += U"   \r\n\r\n  x\n\n   \t1234567 '' ''s  !!\n\n!!  ";
  for (const char* pattern : kPatterns) EXPECT_EQ(difference(pattern, text), "") << pattern;
}

TEST(WordSplit, EveryTokenizerCaseMatchesOniguruma) {
  for (const auto& c :
       berth::testing::read_jsonl(berth::testing::source_dir() + "/tests/goldens/tokenizer_cases.jsonl")) {
    for (const char* key : {"text", "text_pair"}) {
      if (!c.contains(key)) continue;
      const std::string text = c[key].get<std::string>();
      for (const char* pattern : kPatterns)
        EXPECT_EQ(pattern_matches(pattern, text), pattern_matches(pattern, text, false))
            << pattern << " " << c.dump();
    }
  }
}

}  // namespace
