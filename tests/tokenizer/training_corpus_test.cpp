// Training corpora (plain text, JSONL) and the vocab.txt / tokenizer_config.json the trainer writes.
#include "berth/tokenizer/training_corpus.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/data_files.h"
#include "support/test_support.h"

namespace {

using namespace berth::tokenizer;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;
using berth::testing::write_file;

void split_on_spaces(std::string_view text, std::vector<std::string>& words) {
  std::istringstream in{std::string(text)};
  std::string word;
  while (in >> word) words.push_back(word);
}

TEST(TrainingCorpus, PlainTextAndJsonlAreCountedTogether) {
  TempDir dir;
  auto text = write_file(dir, "a.txt", "\xEF\xBB\xBFthe cat\r\n\n  \nthe dog\n");
  auto jsonl = write_file(dir, "b.jsonl", "{\"text\": \"the end\", \"label\": 1}\n\n");
  auto counts = count_training_words({text, jsonl}, split_on_spaces);
  EXPECT_EQ(counts.size(), 4u);
  EXPECT_EQ(counts["the"], 3u);
  EXPECT_EQ(counts["cat"], 1u);
  EXPECT_EQ(counts["end"], 1u);
}

TEST(TrainingCorpus, WithEndingsGivesEveryLineAsHfTrainReadsFiles) {
  TempDir dir;
  auto text = write_file(dir, "a.txt", "\xEF\xBB\xBFthe cat\r\n\n  \nthe dog");
  auto jsonl = write_file(dir, "b.jsonl", "{\"text\": \"one\\ntwo\"}\n\n");
  std::vector<std::string> documents;
  for (const auto& path : {text, jsonl})
    for_each_training_text(
        path, [&](std::string_view document) { documents.emplace_back(document); }, TextLines::WithEndings);
  EXPECT_EQ(documents,
            (std::vector<std::string>{"\xEF\xBB\xBFthe cat\r\n", "\n", "  \n", "the dog", "one\ntwo"}));
}

TEST(TrainingCorpus, AWordSplitterErrorNamesTheFileAndLine) {
  TempDir dir;
  auto text = write_file(dir, "c.txt", "fine\nbad \xFF\n");
  expect_contains(error_text([&] {
                    count_training_words({text}, [](std::string_view document, std::vector<std::string>&) {
                      BERTH_CHECK(document.find('\xFF') == std::string_view::npos, "not UTF-8");
                    });
                  }),
                  {"c.txt:2: not UTF-8"});
}

TEST(TrainingCorpus, BadJsonlNamesTheLine) {
  TempDir dir;
  auto bad = write_file(dir, "c.jsonl", "{\"text\": \"ok\"}\n{\"body\": \"x\"}\n");
  expect_contains(error_text([&] { count_training_words({bad}, split_on_spaces); }),
                  {"c.jsonl:2: expected an object with a string \"text\"", "Fix:"});
  auto broken = write_file(dir, "d.jsonl", "{\"text\": \n");
  expect_contains(error_text([&] { count_training_words({broken}, split_on_spaces); }),
                  {"d.jsonl:1: malformed JSON"});
  expect_contains(error_text([&] { count_training_words({dir.file("none.txt")}, split_on_spaces); }),
                  {"none.txt: cannot open (No such file or directory)"});
}

TEST(TrainingCorpus, WritesVocabAndConfig) {
  TempDir dir;
  write_wordpiece_files(dir.file("out"), {"[PAD]", "[UNK]", "a", "##b"}, /*lowercase=*/false);
  std::ifstream vocab(dir.file("out/vocab.txt"));
  std::stringstream text;
  text << vocab.rdbuf();
  EXPECT_EQ(text.str(), "[PAD]\n[UNK]\na\n##b\n");
  std::ifstream config_file(dir.file("out/tokenizer_config.json"));
  auto config = nlohmann::json::parse(config_file);
  EXPECT_EQ(config["do_lower_case"], false);
  EXPECT_EQ(config["unk_token"], "[UNK]");
  EXPECT_EQ(config["pad_token"], "[PAD]");
  EXPECT_FALSE(config.contains("cls_token"));
  EXPECT_EQ(config["model_max_length"], 512);
}

}  // namespace
