// WordPiece: greedy longest-match with the continuation prefix, [UNK] rules, and vocabulary file errors.
#include "berth/tokenizer/wordpiece.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/test_support.h"

namespace {

using berth::tokenizer::WordPiece;
using berth::tokenizer::WordPieceOptions;
using berth::tokenizer::WordPiecePiece;

std::vector<std::pair<std::string, std::pair<uint32_t, uint32_t>>> pieces(const WordPiece& wp,
                                                                          const std::string& word,
                                                                          size_t chars) {
  std::vector<WordPiecePiece> out;
  wp.tokenize(word, chars, out);
  std::vector<std::pair<std::string, std::pair<uint32_t, uint32_t>>> result;
  for (const auto& p : out) result.push_back({wp.id_to_token(p.id), {p.begin, p.end}});
  return result;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(WordPiece, GreedyLongestMatchFirst) {
  WordPiece wp({"[UNK]", "un", "##aff", "##able", "unaff", "##a", "##ble"});
  // "unaff" wins over "un" at the start; then "##able" over "##a".
  EXPECT_EQ(pieces(wp, "unaffable", 9), (decltype(pieces(wp, "", 0)){{"unaff", {0, 5}}, {"##able", {5, 9}}}));
}

TEST(WordPiece, AnUncoverablePartMakesTheWholeWordUnknown) {
  WordPiece wp({"[UNK]", "un", "##aff"});
  EXPECT_EQ(pieces(wp, "unaffx", 6), (decltype(pieces(wp, "", 0)){{"[UNK]", {0, 6}}}));
}

TEST(WordPiece, WordsLongerThanTheLimitInCharactersAreUnknown) {
  WordPieceOptions options;
  options.max_input_chars_per_word = 3;
  WordPiece wp({"[UNK]", "\xC3\xA9\xC3\xA9\xC3\xA9", "aaaa"}, options);
  EXPECT_EQ(pieces(wp, "\xC3\xA9\xC3\xA9\xC3\xA9", 3)[0].first,
            "\xC3\xA9\xC3\xA9\xC3\xA9");  // 6 bytes, 3 chars
  EXPECT_EQ(pieces(wp, "aaaa", 4)[0].first, "[UNK]");
}

TEST(WordPiece, VocabFileTrimsLineEndsAndNumbersLines) {
  berth::testing::TempDir dir;
  write(dir.file("vocab.txt"), "[UNK]\r\nhello  \n##lo\n");
  WordPiece wp = WordPiece::from_file(dir.file("vocab.txt"));
  EXPECT_EQ(wp.size(), 3u);
  EXPECT_EQ(wp.token_to_id("hello"), 1);
  EXPECT_EQ(wp.token_to_id("##lo"), 2);
  EXPECT_FALSE(wp.token_to_id("hell").has_value());
}

TEST(WordPiece, DuplicateTokenNamesBothLines) {
  berth::testing::TempDir dir;
  write(dir.file("vocab.txt"), "[UNK]\nhello\nworld\nhello\n");
  std::string text = berth::testing::error_text([&] { WordPiece::from_file(dir.file("vocab.txt")); });
  berth::testing::expect_contains(text, {"vocab.txt:4", "'hello' appears twice", "first on line 2", "Fix:"});
}

TEST(WordPiece, MissingUnknownTokenIsAnError) {
  berth::testing::TempDir dir;
  write(dir.file("vocab.txt"), "hello\nworld\n");
  std::string text = berth::testing::error_text([&] { WordPiece::from_file(dir.file("vocab.txt")); });
  berth::testing::expect_contains(text,
                                  {"vocab.txt", "unknown token '[UNK]' is not in the vocabulary", "Fix:"});
}

TEST(WordPiece, EmptyAndMissingFilesAreErrors) {
  berth::testing::TempDir dir;
  write(dir.file("vocab.txt"), "");
  berth::testing::expect_contains(
      berth::testing::error_text([&] { WordPiece::from_file(dir.file("vocab.txt")); }),
      {"vocab.txt", "the vocabulary is empty"});
  berth::testing::expect_contains(
      berth::testing::error_text([&] { WordPiece::from_file(dir.file("none.txt")); }),
      {"cannot open the vocabulary", "none.txt"});
}

TEST(WordPiece, InvalidUtf8LineNamesFileAndLine) {
  berth::testing::TempDir dir;
  write(dir.file("vocab.txt"), "[UNK]\nok\nbad\xFF\n");
  berth::testing::expect_contains(
      berth::testing::error_text([&] { WordPiece::from_file(dir.file("vocab.txt")); }),
      {"vocab.txt:3", "not valid UTF-8"});
}

}  // namespace
