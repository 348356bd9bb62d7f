// `berth tokenizer train` as users run it: files written, exit codes and messages for bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli_runner.h"
#include "support/data_files.h"
#include "support/test_support.h"

namespace {

using berth::testing::TempDir;
using berth::testing::write_file;

using berth::testing::CliResult;
using berth::testing::run_cli;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(TokenizerTrainCli, WritesVocabAndConfig) {
  TempDir dir;
  std::string corpus;
  for (int i = 0; i < 20; ++i)
    corpus += "The Quick brown fox jumps over the lazy dog. Caf\xC3\xA9 d\xC3\xA9j\xC3\xA0 vu!\n";
  auto text = write_file(dir, "corpus.txt", corpus);
  auto jsonl = write_file(dir, "more.jsonl", "{\"text\": \"Foxes and dogs\"}\n");
  auto result = run_cli("tokenizer train --input " + text + " " + jsonl + " --vocab-size 60 --output " +
                        dir.file("out"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("trained a WordPiece vocabulary of 60 tokens"), std::string::npos)
      << result.output;
  const auto vocab = read_lines(dir.file("out/vocab.txt"));
  ASSERT_EQ(vocab.size(), 60u);
  EXPECT_EQ(std::vector<std::string>(vocab.begin(), vocab.begin() + 5),
            (std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}));
  // Lowercased and accents stripped: no uppercase letter and no 'é' in the alphabet.
  for (const std::string& token : vocab) {
    EXPECT_EQ(token.find('T'), std::string::npos) << token;
    EXPECT_EQ(token.find("\xC3\xA9"), std::string::npos) << token;
  }
  std::ifstream config_file(dir.file("out/tokenizer_config.json"));
  EXPECT_EQ(nlohmann::json::parse(config_file)["do_lower_case"], true);
  // The folder is a whole tokenizer: tokenizer.json too, and berth tokenize reads it without [UNK] for
  // words of the corpus.
  std::ifstream tokenizer_json(dir.file("out/tokenizer.json"));
  EXPECT_EQ(nlohmann::json::parse(tokenizer_json)["model"]["type"], "WordPiece");
  auto input = write_file(dir, "in.jsonl", "{\"text\": \"The lazy fox\"}\n");
  auto tokens = run_cli("tokenize --tokenizer " + dir.file("out") + " --input " + input, false);
  ASSERT_EQ(tokens.exit_code, 0) << tokens.output;
  auto ids = nlohmann::json::parse(tokens.output)["input_ids"];
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 2);                                     // [CLS]
  EXPECT_EQ(ids.back(), 3);                                      // [SEP]
  for (const auto& id : ids) EXPECT_NE(id, 1) << tokens.output;  // [UNK]
}

TEST(TokenizerTrainCli, CasedTrainingKeepsCase) {
  TempDir dir;
  auto text = write_file(dir, "corpus.txt", "Apple apple APPLE\n");
  auto result = run_cli("tokenizer train --no-lowercase --min-frequency 1 --special-tokens [UNK] --input " +
                        text + " --vocab-size 100 --output " + dir.file("out"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto vocab = read_lines(dir.file("out/vocab.txt"));
  EXPECT_EQ(vocab.front(), "[UNK]");
  EXPECT_NE(std::find(vocab.begin(), vocab.end(), "APPLE"), vocab.end());
}

TEST(TokenizerTrainCli, BadInputExitsTwoWithFileAndLine) {
  TempDir dir;
  auto bad = write_file(dir, "bad.jsonl", "{\"text\": \"ok\"}\n{\"txt\": \"no\"}\n");
  auto result = run_cli("tokenizer train --input " + bad + " --vocab-size 50 --output " + dir.file("out"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("bad.jsonl:2: expected an object with a string \"text\""), std::string::npos)
      << result.output;
  EXPECT_FALSE(std::ifstream(dir.file("out/vocab.txt")).good());
  auto missing = run_cli("tokenizer train --input " + dir.file("none.txt") + " --vocab-size 50 --output x");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
}

nlohmann::json tokenizer_train_cli_read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
}

TEST(TokenizerTrainCli, BpeWritesATokenizerBerthTokenizeReads) {
  TempDir dir;
  std::string corpus;
  for (int i = 0; i < 20; ++i)
    corpus += "The Quick brown fox jumps over the lazy dog. Caf\xC3\xA9 d\xC3\xA9j\xC3\xA0 vu!\n";
  auto text = write_file(dir, "corpus.txt", corpus);
  auto result = run_cli("tokenizer train --model bpe --input " + text + " --vocab-size 300 --output " +
                        dir.file("out"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("trained a byte-level BPE (39 merges) of 300 tokens"), std::string::npos)
      << result.output;
  const nlohmann::json tokenizer = tokenizer_train_cli_read_json(dir.file("out/tokenizer.json"));
  EXPECT_EQ(tokenizer["model"]["type"], "BPE");
  EXPECT_EQ(tokenizer["model"]["vocab"].size(), 300u);
  EXPECT_EQ(tokenizer["model"]["vocab"]["<s>"], 0);  // RoBERTa's special tokens by default, then 256 bytes
  EXPECT_EQ(tokenizer["model"]["vocab"]["<mask>"], 4);
  EXPECT_EQ(tokenizer["model"]["vocab"]["!"], 5);
  EXPECT_EQ(tokenizer["model"]["merges"].size(), 39u);
  EXPECT_EQ(tokenizer["pre_tokenizer"]["type"], "ByteLevel");
  EXPECT_EQ(tokenizer["pre_tokenizer"]["add_prefix_space"], false);
  EXPECT_EQ(tokenizer["decoder"]["type"], "ByteLevel");
  EXPECT_EQ(tokenizer["added_tokens"].size(), 5u);
  const nlohmann::json config = tokenizer_train_cli_read_json(dir.file("out/tokenizer_config.json"));
  EXPECT_EQ(config["tokenizer_class"], "PreTrainedTokenizerFast");
  EXPECT_EQ(config["pad_token"], "<pad>");
  EXPECT_EQ(config["eos_token"], "</s>");
  EXPECT_FALSE(std::ifstream(dir.file("out/vocab.txt")).good());

  auto input = write_file(dir, "in.jsonl", "{\"text\": \"The lazy fox\"}\n");
  auto tokens = run_cli("tokenize --tokenizer " + dir.file("out") + " --input " + input, false);
  ASSERT_EQ(tokens.exit_code, 0) << tokens.output;
  const auto ids = nlohmann::json::parse(tokens.output)["input_ids"];
  EXPECT_GE(ids.size(), 3u);
  EXPECT_LE(ids.size(), 6u);  // "The", " lazy", " fox", in whole or in a few pieces
  for (const auto& id : ids) EXPECT_GE(id, 5) << tokens.output;  // no special token

  // --special-tokens '' asks for none: the bytes take the first ids.
  auto bare = run_cli("tokenizer train --model bpe --special-tokens '' --input " + text +
                      " --vocab-size 300 --output " + dir.file("bare"));
  ASSERT_EQ(bare.exit_code, 0) << bare.output;
  const nlohmann::json bare_tokenizer = tokenizer_train_cli_read_json(dir.file("bare/tokenizer.json"));
  EXPECT_EQ(bare_tokenizer["added_tokens"].size(), 0u);
  EXPECT_EQ(bare_tokenizer["model"]["vocab"]["!"], 0);
}

TEST(TokenizerTrainCli, BpeMatchesHfOnTheGoldenCorpus) {
  // The CLI end to end against HF's own tokenizer.json (tests/goldens/bpe_trainer_goldens.py): the
  // ByteLevelBPETokenizer recipe with RoBERTa's special tokens, then with a prefix space and a min_frequency
  // that stops training early.
  const std::string golden = berth::testing::golden_dir();
  if (!std::ifstream(golden + "/bpe_trainer_roberta/tokenizer.json").good())
    GTEST_FAIL() << "missing " << golden << "/bpe_trainer_roberta: the build generates it with HF tokenizers";
  TempDir dir;
  const std::string corpus = golden + "/bpe_trainer_corpus.txt";
  auto roberta =
      run_cli("tokenizer train --model bpe --input " + corpus +
              " --vocab-size 2000 --min-frequency 2 --special-tokens '<s>,<pad>,</s>,<unk>,<mask>' "
              "--output " +
              dir.file("roberta"));
  ASSERT_EQ(roberta.exit_code, 0) << roberta.output;
  EXPECT_EQ(tokenizer_train_cli_read_json(dir.file("roberta/tokenizer.json")),
            tokenizer_train_cli_read_json(golden + "/bpe_trainer_roberta/tokenizer.json"));
  auto prefix = run_cli("tokenizer train --model bpe --add-prefix-space --input " + corpus +
                        " --vocab-size 30000 --min-frequency 20 --special-tokens '<|endoftext|>' --output " +
                        dir.file("prefix"));
  ASSERT_EQ(prefix.exit_code, 0) << prefix.output;
  EXPECT_NE(prefix.output.find("note: the corpus allowed only"), std::string::npos) << prefix.output;
  EXPECT_EQ(tokenizer_train_cli_read_json(dir.file("prefix/tokenizer.json")),
            tokenizer_train_cli_read_json(golden + "/bpe_trainer_prefix_space/tokenizer.json"));
}

TEST(TokenizerTrainCli, BadFlagValuesExitTwoWithTheFix) {
  TempDir dir;
  auto text = write_file(dir, "corpus.txt", "some words and some more words\n");
  const auto expect_refused = [&](const std::string& flags, const std::vector<std::string>& parts) {
    auto result = run_cli("tokenizer train --input " + text + " --output " + dir.file("out") + " " + flags);
    EXPECT_EQ(result.exit_code, 2) << flags << "\n" << result.output;
    berth::testing::expect_contains(result.output, parts);
    EXPECT_FALSE(std::ifstream(dir.file("out/tokenizer.json")).good()) << flags;
    EXPECT_FALSE(std::ifstream(dir.file("out/vocab.txt")).good()) << flags;
  };
  expect_refused("--model unigram --vocab-size 100",
                 {"--model must be bpe or wordpiece, found 'unigram'", "Fix:"});
  expect_refused("--model bpe --vocab-size 0", {"--vocab-size must be >= 1, found 0", "Fix:"});
  expect_refused("--model bpe --vocab-size 100 --limit-alphabet 0",
                 {"--limit-alphabet must be >= 1, found 0"});
  expect_refused("--model bpe --vocab-size 100 --max-token-length 0",
                 {"--max-token-length must be >= 1, found 0", "Fix:"});
  expect_refused("--vocab-size 100 --add-prefix-space",
                 {"--add-prefix-space is for --model bpe, found --model wordpiece", "Fix:"});
  expect_refused("--model bpe --vocab-size 100 --no-lowercase",
                 {"--lowercase and --no-lowercase are for --model wordpiece, found --model bpe", "Fix:"});
  expect_refused("--model bpe --vocab-size 100 --min-frequency=-1",
                 {"--min-frequency must be >= 0, found -1", "Fix:"});
  expect_refused("--model bpe --vocab-size ten", {"--vocab-size"});
}

}  // namespace
