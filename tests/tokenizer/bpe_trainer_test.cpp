// The BPE trainer against HF's BpeTrainer (goldens from HF tokenizers on SpamAssassin emails, and the Rust
// library's own unit tests), the byte-level word split, the directory it writes, and its properties.
#include "berth/tokenizer/bpe_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/tokenizer/byte_level.h"
#include "berth/tokenizer/byte_level_bpe_files.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "berth/tokenizer/training_corpus.h"
#include "support/data_files.h"
#include "support/test_support.h"
#include "support/tokenizer_goldens.h"

namespace {

using namespace berth::tokenizer;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;
using WordCounts = std::unordered_map<std::string, uint64_t>;
using Merges = std::vector<std::pair<std::string, std::string>>;

std::string golden_path(const std::string& name) { return berth::testing::golden_dir() + "/" + name; }

nlohmann::json bpe_trainer_read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "missing " << path << ": the build generates it with the venv's HF tokenizers";
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
}

// HF's words of the golden corpus: read as Tokenizer.train(files) reads it, split by ByteLevel.
WordCounts corpus_words(bool add_prefix_space) {
  return count_training_words(
      {golden_path("bpe_trainer_corpus.txt")},
      [&](std::string_view text, std::vector<std::string>& words) {
        byte_level_words(text, add_prefix_space, words);
      },
      TextLines::WithEndings);
}

BpeTrainerOptions bpe_trainer_options_of(const nlohmann::json& setting) {
  BpeTrainerOptions options;
  options.vocab_size = setting["vocab_size"].get<size_t>();
  options.min_frequency = setting["min_frequency"].get<uint64_t>();
  options.special_tokens = setting["special_tokens"].get<std::vector<std::string>>();
  if (!setting["limit_alphabet"].is_null()) options.limit_alphabet = setting["limit_alphabet"].get<size_t>();
  if (setting["initial_alphabet"].get<bool>()) options.initial_alphabet = byte_level_alphabet();
  if (!setting["max_token_length"].is_null())
    options.max_token_length = setting["max_token_length"].get<size_t>();
  return options;
}

Merges merges_of(const nlohmann::json& setting) {
  Merges merges;
  for (const auto& merge : setting["merges"]) merges.emplace_back(merge[0], merge[1]);
  return merges;
}

// Where two lists first differ, for a readable failure.
template <typename T>
size_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

TEST(BpeTrainer, MatchesHfOnSpamAssassinAtEverySetting) {
  const nlohmann::json golden = bpe_trainer_read_json(golden_path("bpe_trainer_golden.json"));
  ASSERT_GE(golden["settings"].size(), 3u);
  for (const auto& setting : golden["settings"]) {
    const std::string name = setting["name"];
    const TrainedBpe trained =
        train_bpe(corpus_words(setting["add_prefix_space"].get<bool>()), bpe_trainer_options_of(setting));
    const auto vocab = setting["vocab"].get<std::vector<std::string>>();
    const Merges merges = merges_of(setting);
    const size_t token = first_difference(trained.vocab, vocab);
    EXPECT_EQ(token, std::max(vocab.size(), trained.vocab.size()))
        << name << ": vocabularies of " << trained.vocab.size() << " (berth) and " << vocab.size()
        << " (HF) tokens differ first at id " << token;
    const size_t merge = first_difference(trained.merges, merges);
    EXPECT_EQ(merge, std::max(merges.size(), trained.merges.size()))
        << name << ": " << trained.merges.size() << " (berth) and " << merges.size()
        << " (HF) merges differ first at rank " << merge;
  }
}

TEST(BpeTrainer, WritesTheTokenizerJsonHfSavesAndEncodesAsHf) {
  const nlohmann::json golden = bpe_trainer_read_json(golden_path("bpe_trainer_golden.json"));
  size_t written = 0;
  for (const auto& setting : golden["settings"]) {
    if (!setting["write"].get<bool>()) continue;
    const std::string name = setting["name"];
    const bool add_prefix_space = setting["add_prefix_space"];
    TrainedBpe trained{setting["vocab"].get<std::vector<std::string>>(), merges_of(setting)};
    TempDir dir;
    const auto specials = setting["special_tokens"].get<std::vector<std::string>>();
    write_byte_level_bpe_files(dir.file("out"), trained, specials, add_prefix_space);
    const std::string hf_dir = golden_path("bpe_trainer_" + name);
    EXPECT_EQ(bpe_trainer_read_json(dir.file("out/tokenizer.json")),
              bpe_trainer_read_json(hf_dir + "/tokenizer.json"))
        << name;

    // berth's pipeline reads the directory and encodes held-out emails as HF does.
    const Tokenizer tokenizer = load_tokenizer(dir.file("out"));
    EXPECT_EQ(tokenizer.model_max_length, 512u);
    const auto goldens = berth::testing::read_jsonl(hf_dir + "/encodings.jsonl");
    EXPECT_GE(goldens.size(), 40u);
    for (const auto& encoding : goldens) {
      const std::string diff = berth::testing::encoding_difference(
          tokenizer.encode(encoding["text"].get<std::string>()), encoding);
      EXPECT_EQ(diff, "") << name;
      if (!diff.empty()) break;
    }
    ++written;
  }
  EXPECT_EQ(written, 2u);
}

TEST(BpeTrainer, TokenizerConfigNamesTheSpecialTokensRoles) {
  TempDir dir;
  const TrainedBpe bpe{{"<s>", "<pad>", "</s>", "<unk>", "<mask>", "a", "b", "ab"}, {{"a", "b"}}};
  write_byte_level_bpe_files(dir.file("roberta"), bpe, {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}, true);
  const nlohmann::json roberta = bpe_trainer_read_json(dir.file("roberta/tokenizer_config.json"));
  EXPECT_EQ(roberta["tokenizer_class"], "PreTrainedTokenizerFast");
  EXPECT_EQ(roberta["model_max_length"], 512);
  EXPECT_EQ(roberta["bos_token"], "<s>");
  EXPECT_EQ(roberta["cls_token"], "<s>");
  EXPECT_EQ(roberta["eos_token"], "</s>");
  EXPECT_EQ(roberta["sep_token"], "</s>");
  EXPECT_EQ(roberta["unk_token"], "<unk>");
  EXPECT_EQ(roberta["pad_token"], "<pad>");
  EXPECT_EQ(roberta["mask_token"], "<mask>");
  const nlohmann::json tokenizer = bpe_trainer_read_json(dir.file("roberta/tokenizer.json"));
  EXPECT_EQ(tokenizer["pre_tokenizer"]["add_prefix_space"], true);
  EXPECT_EQ(tokenizer["post_processor"]["add_prefix_space"], true);
  EXPECT_EQ(tokenizer["added_tokens"].size(), 5u);

  const TrainedBpe gpt2{{"<|endoftext|>", "a", "b"}, {}};
  write_byte_level_bpe_files(dir.file("gpt2"), gpt2, {"<|endoftext|>"}, false, 1024);
  const nlohmann::json config = bpe_trainer_read_json(dir.file("gpt2/tokenizer_config.json"));
  EXPECT_EQ(config["bos_token"], "<|endoftext|>");
  EXPECT_EQ(config["eos_token"], "<|endoftext|>");
  EXPECT_EQ(config["unk_token"], "<|endoftext|>");
  EXPECT_FALSE(config.contains("pad_token"));
  EXPECT_EQ(config["model_max_length"], 1024);
  // No temporary file is left behind.
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.file("gpt2"))) ++files;
  EXPECT_EQ(files, 2u);
  expect_contains(error_text([&] { write_byte_level_bpe_files(dir.file("bad"), gpt2, {"<s>"}, false); }),
                  {"special token '<s>' is not in the trained vocabulary", "Fix:"});
}

TEST(BpeTrainer, MatchesHfBpeTrainerUnitTest) {
  // HF's own test (tokenizers/src/models/bpe/trainer.rs, test_train): min_frequency 2.
  const WordCounts counts = {{"roses", 1}, {"are", 2}, {"red", 1}, {"voilets", 1}, {"blue", 1}, {"BERT", 1},
                             {"is", 2},    {"big", 1}, {"and", 1}, {"so", 1},      {"GPT-2", 1}};
  BpeTrainerOptions options;
  options.min_frequency = 2;
  const TrainedBpe trained = train_bpe(counts, options);
  EXPECT_EQ(trained.vocab,
            (std::vector<std::string>{"-", "2", "B", "E", "G", "P", "R", "T", "a", "b",  "d",   "e", "g",
                                      "i", "l", "n", "o", "r", "s", "t", "u", "v", "re", "are", "is"}));
  EXPECT_EQ(trained.merges, (Merges{{"r", "e"}, {"a", "re"}, {"i", "s"}}));
  // max_token_length 3 (HF 0.23.3 on the same words): "are" would be 3 long, and HF counts a new pair only
  // while it is shorter than the limit.
  options.max_token_length = 3;
  options.vocab_size = 40;
  EXPECT_EQ(train_bpe(counts, options).merges, (Merges{{"r", "e"}, {"i", "s"}}));
}

TEST(BpeTrainer, MatchesHfMaxTokenLengthUnitTest) {
  // HF's own test (trainer.rs, bpe_test_max_token_length_direct_assert): max_token_length 2, min_frequency 0.
  WordCounts counts;
  for (const char* word :
       {"sin", "Sin", "Lon", "Ano", "짧은한", "긴한글", "短字符", "长字符", "短い文", "長い文", "so", "GP"})
    counts[word] = 2;
  BpeTrainerOptions options;
  options.max_token_length = 2;
  EXPECT_EQ(train_bpe(counts, options).vocab,
            (std::vector<std::string>{"A",  "G",  "L",    "P",    "S",  "i",  "n",  "o",  "s",    "い",
                                      "字", "文", "短",   "符",   "長", "长", "글", "긴", "은",   "짧",
                                      "한", "in", "い文", "字符", "An", "GP", "Lo", "so", "긴한", "은한"}));
}

TEST(BpeTrainer, EndOfWordSuffixAsHf) {
  // HF 0.23.3: BpeTrainer(min_frequency=0, end_of_word_suffix="</w>") on hello x3, yellow x2, low x4; the
  // suffixed characters in the order that run gave them.
  BpeTrainerOptions options;
  options.end_of_word_suffix = "</w>";
  options.affixed_token_order = std::vector<std::string>{"o</w>", "w</w>"};
  const TrainedBpe trained = train_bpe({{"hello", 3}, {"yellow", 2}, {"low", 4}}, options);
  EXPECT_EQ(trained.vocab,
            (std::vector<std::string>{"e", "h", "l", "o", "w", "y", "o</w>", "w</w>", "lo", "low</w>", "el",
                                      "hel", "lo</w>", "hello</w>", "yel", "yellow</w>"}));
  EXPECT_EQ(trained.merges, (Merges{{"l", "o"},
                                    {"lo", "w</w>"},
                                    {"e", "l"},
                                    {"h", "el"},
                                    {"l", "o</w>"},
                                    {"hel", "lo</w>"},
                                    {"y", "el"},
                                    {"yel", "low</w>"}}));
}

TEST(BpeTrainer, AMergeThatMakesASpecialTokenAddsNoToken) {
  // HF 0.23.3: Tokenizer(BPE()) behind ByteLevel trained from ["<s>hi</s>\n", "<s>ho</s>\n", "<s>hi</s>\n"]
  // with special tokens "hi" and "</": the merges "<" "/" and "h" "i" make them and take their ids.
  WordCounts counts;
  std::vector<std::string> words;
  for (const char* text : {"<s>hi</s>\n", "<s>ho</s>\n", "<s>hi</s>\n"}) byte_level_words(text, false, words);
  for (const std::string& word : words) ++counts[word];
  BpeTrainerOptions options;
  options.vocab_size = 30;
  options.special_tokens = {"hi", "</"};
  const TrainedBpe trained = train_bpe(counts, options);
  EXPECT_EQ(trained.vocab,
            (std::vector<std::string>{"hi", "</", "/", "<", ">", "h", "i", "o", "s", "\u010a", "ho"}));
  EXPECT_EQ(trained.merges, (Merges{{"<", "/"}, {"h", "i"}, {"h", "o"}}));
}

TEST(BpeTrainer, ReadsAFileAsHfsTrainFromFiles) {
  // HF 0.23.3: Tokenizer(BPE()) behind ByteLevel, tokenizer.train([file]) with min_frequency 0 on a file with
  // a BOM, a CRLF line, a blank line, a line of spaces and no final line break: all of them are text to it.
  TempDir dir;
  const std::string file = berth::testing::write_file(dir, "a.txt", "\xEF\xBB\xBFthe cat\r\n\n  \nthe dog");
  const WordCounts counts = count_training_words(
      {file},
      [](std::string_view text, std::vector<std::string>& words) { byte_level_words(text, false, words); },
      TextLines::WithEndings);
  BpeTrainerOptions options;
  options.vocab_size = 1000;
  EXPECT_EQ(train_bpe(counts, options).vocab, (std::vector<std::string>{"a",
                                                                        "c",
                                                                        "d",
                                                                        "e",
                                                                        "g",
                                                                        "h",
                                                                        "o",
                                                                        "t",
                                                                        "\u00bb",
                                                                        "\u00bf",
                                                                        "\u00ef",
                                                                        "\u010a",
                                                                        "\u010d",
                                                                        "\u0120",
                                                                        "he",
                                                                        "the",
                                                                        "at",
                                                                        "cat",
                                                                        "do",
                                                                        "\u00bb\u00bf",
                                                                        "\u00ef\u00bb\u00bf",
                                                                        "\u010d\u010a",
                                                                        "\u0120\u010a",
                                                                        "\u0120cat",
                                                                        "\u0120do",
                                                                        "\u0120\u0120\u010a",
                                                                        "\u0120dog"}));
}

TEST(BpeTrainer, ByteLevelWordsAsHfPreTokenizes) {
  // HF 0.23.3's pre_tokenizers.ByteLevel(add_prefix_space, use_regex=True).pre_tokenize_str.
  const auto words = [](std::string_view text, bool prefix) {
    std::vector<std::string> out;
    byte_level_words(text, prefix, out);
    return out;
  };
  EXPECT_EQ(words("Hello world's  \n\n  x\n", false),
            (std::vector<std::string>{"Hello", "\u0120world", "'s", "\u0120\u0120\u010a\u010a\u0120",
                                      "\u0120x", "\u010a"}));
  EXPECT_EQ(words("Hello world's  \n\n  x\n", true).front(), "\u0120Hello");
  EXPECT_EQ(words("caf\u00e9 \u4e2d\u6587 123abc!!\tok", true),
            (std::vector<std::string>{"\u0120caf\u00c3\u00a9", "\u0120\u00e4\u00b8\u0143\u00e6\u0138\u0129",
                                      "\u0120123", "abc", "!!", "\u0109", "ok"}));
  EXPECT_EQ(words(" leading space", true), (std::vector<std::string>{"\u0120leading", "\u0120space"}));
  EXPECT_TRUE(words("", true).empty());
  expect_contains(error_text([&] { words("ok \xff", false); }), {"not valid UTF-8", "byte offset 3"});
  const std::vector<char32_t> alphabet = byte_level_alphabet();
  ASSERT_EQ(alphabet.size(), 256u);
  EXPECT_TRUE(std::is_sorted(alphabet.begin(), alphabet.end()));
  EXPECT_EQ(alphabet.front(), U'!');
  EXPECT_EQ(byte_char(' '), U'\u0120');
}

// A small corpus's byte-level words, for the properties below.
WordCounts small_corpus() {
  WordCounts counts;
  std::vector<std::string> words;
  for (int i = 0; i < 5; ++i)
    byte_level_words("The quick brown fox jumps over the lazy dog; the dog sleeps, the fox runs again.\n",
                     false, words);
  byte_level_words("Caf\xC3\xA9 d\xC3\xA9j\xC3\xA0 vu \xE4\xB8\xAD\xE6\x96\x87\n", false, words);
  for (const std::string& word : words) ++counts[word];
  return counts;
}

TEST(BpeTrainer, SpecialsThenTheByteAlphabetThenOneTokenPerMerge) {
  BpeTrainerOptions options;
  options.special_tokens = {"<s>", "<pad>", "</s>"};
  options.initial_alphabet = byte_level_alphabet();
  options.vocab_size = 300;
  const TrainedBpe trained = train_bpe(small_corpus(), options);
  ASSERT_EQ(trained.vocab.size(), 300u);
  EXPECT_EQ(std::vector<std::string>(trained.vocab.begin(), trained.vocab.begin() + 3),
            options.special_tokens);
  for (size_t i = 0; i < 256; ++i) {
    std::string expected;
    const char32_t c = options.initial_alphabet[i];
    expected = c < 0x80
                   ? std::string(1, static_cast<char>(c))
                   : std::string{static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
    EXPECT_EQ(trained.vocab[3 + i], expected) << i;
  }
  // Merge i makes token 259 + i out of two tokens before it.
  ASSERT_EQ(trained.merges.size(), 300u - 259u);
  for (size_t i = 0; i < trained.merges.size(); ++i) {
    const auto& [left, right] = trained.merges[i];
    EXPECT_EQ(trained.vocab[259 + i], left + right);
    const auto before = trained.vocab.begin() + static_cast<std::ptrdiff_t>(259 + i);
    EXPECT_NE(std::find(trained.vocab.begin(), before, left), before);
    EXPECT_NE(std::find(trained.vocab.begin(), before, right), before);
  }
}

TEST(BpeTrainer, DeterministicAndASmallerVocabIsAPrefixOfALargerOne) {
  const WordCounts counts = small_corpus();
  WordCounts rehashed(counts.begin(), counts.end());
  rehashed.rehash(1024);  // another bucket count: another iteration order
  BpeTrainerOptions options;
  options.vocab_size = 1000;
  const TrainedBpe large = train_bpe(counts, options);
  const TrainedBpe again = train_bpe(rehashed, options);
  EXPECT_EQ(large.vocab, again.vocab);
  EXPECT_EQ(large.merges, again.merges);
  options.vocab_size = large.vocab.size() - 10;
  const TrainedBpe small = train_bpe(counts, options);
  EXPECT_TRUE(std::equal(small.vocab.begin(), small.vocab.end(), large.vocab.begin()));
  EXPECT_TRUE(std::equal(small.merges.begin(), small.merges.end(), large.merges.begin()));
  EXPECT_EQ(small.merges.size() + 10, large.merges.size());
}

TEST(BpeTrainer, MinFrequencyAndLimitAlphabetAsHf) {
  // Expected: HF 0.23.3's BpeTrainer on the same words.
  BpeTrainerOptions options;
  options.min_frequency = 6;
  const TrainedBpe trained = train_bpe({{"ab", 5}, {"cd", 6}}, options);
  EXPECT_EQ(trained.vocab, (std::vector<std::string>{"a", "b", "c", "d", "cd"}));
  EXPECT_EQ(trained.merges, (Merges{{"c", "d"}}));
  options = {};
  options.limit_alphabet = 2;
  options.initial_alphabet = {U'z'};
  // 'a' x5, 'b' x3, 'c' x1: z stays whatever its count, then the most frequent; words lose the others.
  const TrainedBpe limited = train_bpe({{"aaa", 1}, {"ab", 2}, {"bc", 1}}, options);
  EXPECT_EQ(limited.vocab, (std::vector<std::string>{"a", "z", "aa", "aaa"}));
  EXPECT_EQ(limited.merges, (Merges{{"a", "a"}, {"aa", "a"}}));
}

TEST(BpeTrainer, BadUtf8WordAndBadAffixedOrder) {
  expect_contains(error_text([] { train_bpe({{"a\xFF", 1}}); }), {"word 'a\xFF' is not valid UTF-8", "Fix:"});
  BpeTrainerOptions options;
  options.continuing_subword_prefix = "##";
  options.affixed_token_order = std::vector<std::string>{"##z"};
  expect_contains(error_text([&] {
                    train_bpe({{"ab", 1}}, options);
                  }),
                  {"'##z' is in affixed_token_order", "Fix:"});
}

}  // namespace
