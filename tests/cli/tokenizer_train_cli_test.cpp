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

}  // namespace
