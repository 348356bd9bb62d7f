// The WordPiece trainer against HF's WordPieceTrainer (goldens from the Rust library) and its properties.
#include "berth/tokenizer/wordpiece_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"

namespace {

using berth::tokenizer::train_wordpiece;
using berth::tokenizer::WordPieceTrainerOptions;
using WordpieceTrainerWordCounts = std::unordered_map<std::string, uint64_t>;

// HF's Tokenizer.train: WordPieceTrainer::default() -- no specials, no limits, min_frequency 0.
WordPieceTrainerOptions hf_defaults() {
  WordPieceTrainerOptions options;
  options.vocab_size = 30000;
  options.min_frequency = 0;
  options.special_tokens = {};
  options.limit_alphabet.reset();
  return options;
}

WordpieceTrainerWordCounts count_words(const std::string& text) {
  WordpieceTrainerWordCounts counts;
  std::istringstream in(text);
  std::string word;
  while (in >> word) ++counts[word];
  return counts;
}

// Greedy longest-match-first WordPiece, as BERT tokenises one word; "[UNK]" when some part matches nothing.
std::vector<std::string> wordpiece(const std::string& word, const std::vector<std::string>& vocab) {
  std::vector<std::string> pieces;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    for (; end > start; --end) {
      const std::string piece = (start > 0 ? "##" : "") + word.substr(start, end - start);
      if (std::find(vocab.begin(), vocab.end(), piece) != vocab.end()) {
        pieces.push_back(piece);
        break;
      }
    }
    if (end == start) return {"[UNK]"};
    start = end;
  }
  return pieces;
}

const char* kSmallCorpus =
    "the quick brown fox jumps over the lazy dog the dog barks the fox runs "
    "a lazy afternoon the brown dog sleeps the quick fox jumps again and again";

TEST(WordPieceTrainer, MatchesHfForEveryRecordedRun) {
  const std::string golden = berth::testing::golden_dir() + "/wordpiece_trainer_golden.json";
  if (!std::filesystem::exists(golden))
    GTEST_SKIP() << golden << " missing: node or the npm packages are absent";
  std::ifstream corpus_file(berth::testing::golden_dir() + "/wordpiece_trainer_corpus.txt");
  std::stringstream corpus;
  corpus << corpus_file.rdbuf();
  const WordpieceTrainerWordCounts counts = count_words(corpus.str());
  std::ifstream golden_file(golden);
  const auto runs = nlohmann::json::parse(golden_file)["runs"];
  ASSERT_GE(runs.size(), 2u);
  for (const auto& run : runs) {
    const auto expected = run.get<std::vector<std::string>>();
    WordPieceTrainerOptions options = hf_defaults();
    // The "##c" tokens come right after the single characters, in the order this HF run drew.
    options.continuation_order.emplace();
    for (const std::string& token : expected)
      if (token.rfind("##", 0) == 0 && token.size() == 3) options.continuation_order->push_back(token);
    const std::vector<std::string> vocab = train_wordpiece(counts, options);
    ASSERT_EQ(vocab.size(), expected.size());
    size_t first_difference = 0;
    while (first_difference < vocab.size() && vocab[first_difference] == expected[first_difference])
      ++first_difference;
    EXPECT_EQ(first_difference, vocab.size())
        << "berth '" << vocab[first_difference] << "' vs HF '" << expected[first_difference] << "' at id "
        << first_difference << " of " << vocab.size();
  }
}

TEST(WordPieceTrainer, MatchesHfBpeTrainerUnitTest) {
  // HF's own BpeTrainer test (tokenizers/src/models/bpe/trainer.rs, test_train): no prefix, min_frequency 2.
  const WordpieceTrainerWordCounts counts = {{"roses", 1}, {"are", 2},  {"red", 1},  {"voilets", 1},
                                             {"blue", 1},  {"BERT", 1}, {"is", 2},   {"big", 1},
                                             {"and", 1},   {"so", 1},   {"GPT-2", 1}};
  WordPieceTrainerOptions options = hf_defaults();
  options.min_frequency = 2;
  options.continuing_subword_prefix = "";
  const std::vector<std::string> expected = {"-", "2", "B", "E", "G",  "P",   "R", "T", "a",
                                             "b", "d", "e", "g", "i",  "l",   "n", "o", "r",
                                             "s", "t", "u", "v", "re", "are", "is"};
  EXPECT_EQ(train_wordpiece(counts, options), expected);
}

TEST(WordPieceTrainer, SpecialsAlphabetThenContinuationsThenMerges) {
  WordPieceTrainerOptions options;
  options.min_frequency = 1;
  options.vocab_size = 60;
  const auto vocab = train_wordpiece(count_words(kSmallCorpus), options);
  ASSERT_EQ(vocab.size(), 60u);
  EXPECT_EQ(std::vector<std::string>(vocab.begin(), vocab.begin() + 5),
            (std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}));
  EXPECT_EQ(vocab[5], "a");  // the alphabet in code point order
  std::string letters;
  for (char c : std::string(kSmallCorpus))
    if (c != ' ' && letters.find(c) == std::string::npos) letters += c;
  std::sort(letters.begin(), letters.end());
  for (size_t i = 0; i < letters.size(); ++i) EXPECT_EQ(vocab[5 + i], std::string(1, letters[i]));
  EXPECT_EQ(vocab[5 + letters.size()].substr(0, 2), "##");
}

TEST(WordPieceTrainer, EveryCorpusWordTokenisesWithoutUnk) {
  const WordpieceTrainerWordCounts counts = count_words(kSmallCorpus);
  WordPieceTrainerOptions options;
  options.vocab_size = 45;
  options.min_frequency = 1;
  const auto vocab = train_wordpiece(counts, options);
  for (const auto& [word, count] : counts) {
    const auto pieces = wordpiece(word, vocab);
    EXPECT_NE(pieces, std::vector<std::string>{"[UNK]"}) << word;
  }
  // Frequent words become whole tokens once the vocabulary is large enough.
  options.vocab_size = 1000;
  EXPECT_EQ(wordpiece("the", train_wordpiece(counts, options)), std::vector<std::string>{"the"});
}

TEST(WordPieceTrainer, SmallerVocabIsAPrefixOfALargerOne) {
  const WordpieceTrainerWordCounts counts = count_words(kSmallCorpus);
  WordPieceTrainerOptions options;
  options.min_frequency = 1;
  options.vocab_size = 1000;
  const auto large = train_wordpiece(counts, options);
  options.vocab_size = 70;
  const auto small = train_wordpiece(counts, options);
  ASSERT_EQ(small.size(), 70u);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), large.begin()));
}

TEST(WordPieceTrainer, DeterministicWhateverTheMapOrder) {
  const WordpieceTrainerWordCounts counts = count_words(kSmallCorpus);
  WordpieceTrainerWordCounts reversed(counts.begin(), counts.end());
  reversed.rehash(1024);  // another bucket count: another iteration order
  EXPECT_EQ(train_wordpiece(counts), train_wordpiece(reversed));
}

TEST(WordPieceTrainer, MinFrequencyStopsMerging) {
  WordPieceTrainerOptions options;
  options.min_frequency = 1000;
  const auto vocab = train_wordpiece(count_words(kSmallCorpus), options);
  for (const std::string& token : vocab) {
    const bool single =
        token.size() == 1 || (token.rfind("##", 0) == 0 && token.size() == 3) || token[0] == '[';
    EXPECT_TRUE(single) << token;
  }
}

TEST(WordPieceTrainer, LimitAlphabetKeepsTheMostFrequentCharacters) {
  WordPieceTrainerOptions options;
  options.special_tokens = {};
  options.limit_alphabet = 2;
  options.min_frequency = 1;
  options.vocab_size = 2;
  // 'a' x5, 'b' x3, 'c' x1: 'c' goes and the words lose it, as in HF; the "##c" tokens of the kept characters
  // are added whatever the vocab size, as HF adds them.
  EXPECT_EQ(train_wordpiece({{"aaa", 1}, {"ab", 2}, {"bc", 1}}, options),
            (std::vector<std::string>{"a", "b", "##a", "##b"}));
  options.initial_alphabet = {U'z'};
  EXPECT_EQ(train_wordpiece({{"aaa", 1}, {"ab", 2}, {"bc", 1}}, options),
            (std::vector<std::string>{"a", "z", "##a"}));
}

TEST(WordPieceTrainer, UnicodeWordsAndBadUtf8) {
  WordPieceTrainerOptions options;
  options.special_tokens = {"[UNK]"};
  options.min_frequency = 1;
  const auto vocab = train_wordpiece({{"caf\xC3\xA9", 3}, {"\xE4\xB8\xAD", 1}}, options);
  EXPECT_NE(std::find(vocab.begin(), vocab.end(), "##\xC3\xA9"), vocab.end());
  EXPECT_NE(std::find(vocab.begin(), vocab.end(), "caf\xC3\xA9"), vocab.end());
  berth::testing::expect_contains(berth::testing::error_text([] {
                                    train_wordpiece({{"a\xFF", 1}});
                                  }),
                                  {"word 'a\xFF' is not valid UTF-8", "Fix:"});
}

}  // namespace
