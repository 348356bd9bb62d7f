// BertPreTokenizer: HF's split of "a<cp>a" for every code point, and word boundaries with their positions.
#include "berth/tokenizer/bert_pre_tokenizer.h"

#include <gtest/gtest.h>

#include <unordered_map>

#include "support/tokenizer_goldens.h"

namespace {

using berth::tokenizer::BertNormalizer;
using berth::tokenizer::BertPreTokenizer;
using berth::tokenizer::NormalizedText;
using berth::tokenizer::Word;

// "a<cp>a" splits into 1 piece (a letter), 2 (whitespace) or 3 (punctuation).
TEST(BertPreTokenizerGolden, EveryCodePointSplitsAsHfTokenizers) {
  std::unordered_map<char32_t, int> splits;
  for (const auto& line :
       berth::testing::read_jsonl(berth::testing::golden_dir() + "/tokenizer_codepoints.jsonl"))
    splits[line["cp"].get<char32_t>()] = line["splits"].get<int>();
  ASSERT_FALSE(splits.empty());
  size_t mismatches = 0;
  std::vector<Word> words;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    char buffer[5] = {};
    if (cp < 0x80) {
      buffer[0] = static_cast<char>(cp);
    } else if (cp < 0x800) {
      buffer[0] = static_cast<char>(0xC0 | (cp >> 6)), buffer[1] = static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      buffer[0] = static_cast<char>(0xE0 | (cp >> 12)),
      buffer[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      buffer[2] = static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      buffer[0] = static_cast<char>(0xF0 | (cp >> 18)),
      buffer[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      buffer[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
      buffer[3] = static_cast<char>(0x80 | (cp & 0x3F));
    }
    // No normalization: the pre-tokenizer sees the code point itself, as in HF's own test.
    NormalizedText normalized{
        "a" + std::string(buffer, cp == 0 ? 1 : std::char_traits<char>::length(buffer)) + "a", {0, 1, 2}};
    words.clear();
    BertPreTokenizer::split(normalized, words);
    auto it = splits.find(cp);
    const int want = it == splits.end() ? 1 : it->second;
    if (static_cast<int>(words.size()) != want) {
      ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(cp) << ": berth " << words.size()
                    << " pieces, HF " << want;
      if (++mismatches == 20) return;
    }
  }
}

TEST(BertPreTokenizer, SplitsWhitespaceAndIsolatesPunctuation) {
  NormalizedText text = BertNormalizer().normalize("Hey friend!     How are you?!?");
  EXPECT_EQ(BertPreTokenizer::split_strings(text),
            (std::vector<std::string>{"hey", "friend", "!", "how", "are", "you", "?", "!", "?"}));
}

TEST(BertPreTokenizer, WordsCarryBytesAndCharacters) {
  NormalizedText text = BertNormalizer().normalize("d\xC3\xA9j\xC3\xA0-vu");  // "déjà-vu" -> "deja-vu"
  std::vector<Word> words;
  BertPreTokenizer::split(text, words);
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[1].byte_begin, 4u);
  EXPECT_EQ(words[1].char_begin, 4u);
  EXPECT_EQ(words[2].char_end, 7u);
}

}  // namespace
