// `berth tokenize` as users run it: JSONL in and out in order, the flags, and bad input lines by file:line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "berth/tokenizer/tokenizer_files.h"
#include "support/cli_runner.h"
#include "support/test_support.h"

namespace {

using CliRun = berth::testing::CliResult;

CliRun berth_cli(const std::string& args, bool merge_stderr = true) {
  return berth::testing::run_cli(args, merge_stderr);
}

std::vector<nlohmann::json> lines_of(const std::string& text) {
  std::vector<nlohmann::json> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) out.push_back(nlohmann::json::parse(text.substr(pos, end - pos)));
    pos = end + 1;
  }
  return out;
}

class TokenizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir.file("in.jsonl")) << R"({"text": "Hello, world!"})"
                                        << "\n"
                                        << R"({"text": "How old are you?", "text_pair": "I'm 6 years old"})"
                                        << "\n"
                                        << "\n"
                                        << R"({"text": "caf\u00e9 \u4e2d"})"
                                        << "\n";
  }
  std::string tokenizer = berth::testing::bert_base_uncased_dir();
  berth::testing::TempDir dir;
};

TEST_F(TokenizeCli, AnInputLineThatIsNotUtf8IsNamedWithItsByte) {
  std::ofstream(dir.file("latin1.jsonl"), std::ios::binary) << R"({"text": "fine"})"
                                                            << "\n{\"text\": \"caf\xE9\"}\n";
  CliRun run = berth_cli("tokenize --tokenizer " + tokenizer + " --input " + dir.file("latin1.jsonl"));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  berth::testing::expect_contains(
      run.output, {"latin1.jsonl:2", "not valid UTF-8", "0xE9", "byte offset 13", "Fix:", "iconv"});
}

TEST_F(TokenizeCli, WritesOneLinePerInputInOrderAsTheLibrary) {
  CliRun run = berth_cli("tokenize --tokenizer " + tokenizer + " --input " + dir.file("in.jsonl"), false);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto lines = lines_of(run.output);
  ASSERT_EQ(lines.size(), 3u);
  auto t = berth::tokenizer::load_tokenizer(tokenizer);
  auto pair = t.encode("How old are you?", std::string_view("I'm 6 years old"));
  EXPECT_EQ(lines[1]["input_ids"].get<std::vector<int64_t>>(), pair.ids);
  EXPECT_EQ(lines[1]["token_type_ids"].get<std::vector<int64_t>>(), pair.type_ids);
  EXPECT_EQ(lines[2]["input_ids"].get<std::vector<int64_t>>(), t.encode("caf\xC3\xA9 \xE4\xB8\xAD").ids);
  EXPECT_EQ(lines[0]["offsets"][1], nlohmann::json::array({0, 5}));
  EXPECT_TRUE(lines[0].contains("attention_mask"));
}

TEST_F(TokenizeCli, TruncationPaddingAndNoSpecialTokens) {
  CliRun run =
      berth_cli("tokenize --tokenizer " + tokenizer + " --input " + dir.file("in.jsonl") +
                    " --max-length 6 --truncation --padding max_length --output " + dir.file("out.jsonl"),
                false);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream in(dir.file("out.jsonl"));
  auto lines = lines_of(std::string(std::istreambuf_iterator<char>(in), {}));
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& line : lines) EXPECT_EQ(line["input_ids"].size(), 6u) << line.dump();
  EXPECT_EQ(lines[2]["attention_mask"], nlohmann::json::array({1, 1, 1, 1, 0, 0}));

  run = berth_cli("tokenize --tokenizer " + tokenizer + " --input " + dir.file("in.jsonl") +
                      " --no-special-tokens --truncation only_second --max-length 3",
                  true);
  EXPECT_EQ(run.exit_code, 2) << run.output;  // line 1 has no pair to truncate: named by file:line
  berth::testing::expect_contains(run.output, {"in.jsonl:1", "only_second needs a text pair"});
}

TEST_F(TokenizeCli, BadInputLineNamesFileLineAndExpectation) {
  std::ofstream(dir.file("bad.jsonl")) << R"({"text": "fine"})"
                                       << "\n"
                                       << R"({"txt": "oops"})"
                                       << "\n";
  CliRun run = berth_cli("tokenize --tokenizer " + tokenizer + " --input " + dir.file("bad.jsonl"));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  berth::testing::expect_contains(run.output, {"bad.jsonl:2", "expected an object with a string \"text\""});

  std::ofstream(dir.file("bad.jsonl")) << "{not json\n";
  run = berth_cli("tokenize --tokenizer " + tokenizer + " --input " + dir.file("bad.jsonl"));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  berth::testing::expect_contains(run.output, {"bad.jsonl:1", "not valid JSON"});
}

TEST_F(TokenizeCli, TruncationWithoutAnyLengthAsksForMaxLength) {
  CliRun run =
      berth_cli("tokenize --tokenizer " + tokenizer + " --input " + dir.file("in.jsonl") + " --truncation");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  berth::testing::expect_contains(run.output, {"--truncation needs a length", "Fix: pass --max-length"});
}

// Llama 3's tokenizer.json (byte-level BPE, a regex split) runs through the pipeline, as the library encodes.
TEST_F(TokenizeCli, AnyTokenizerJsonRunsThroughThePipeline) {
  const std::string llama3 = berth::testing::golden_dir() + "/hf_tokenizers/llama3";
  CliRun run = berth_cli("tokenize --tokenizer " + llama3 + " --input " + dir.file("in.jsonl"), false);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto lines = lines_of(run.output);
  ASSERT_EQ(lines.size(), 3u);
  const auto t = berth::tokenizer::load_tokenizer(llama3);
  EXPECT_EQ(lines[0]["input_ids"].get<std::vector<int64_t>>(), t.encode("Hello, world!").ids);
  EXPECT_EQ(lines[1]["input_ids"].get<std::vector<int64_t>>(),
            t.encode("How old are you?", std::string_view("I'm 6 years old")).ids);
  run =
      berth_cli("tokenize --tokenizer " + llama3 + " --input " + dir.file("in.jsonl") + " --padding longest");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  berth::testing::expect_contains(run.output, {"--padding needs a pad token", "pad_token", "Fix:"});
}

TEST_F(TokenizeCli, AnUnknownComponentIsNamedWithItsJsonPath) {
  std::filesystem::create_directories(dir.file("foo"));
  std::ofstream(dir.file("foo/tokenizer.json"))
      << R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
      "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}, {"type": "Foo"}]}})";
  CliRun run = berth_cli("tokenize --tokenizer " + dir.file("foo") + " --input " + dir.file("in.jsonl"));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  berth::testing::expect_contains(run.output,
                                  {"foo/tokenizer.json", "pre_tokenizer.pretokenizers[1].type: \"Foo\"",
                                   "is not a pre-tokenizer berth knows; it knows"});
}

TEST_F(TokenizeCli, HelpShowsTheOptionsAndDefaults) {
  CliRun run = berth_cli("tokenize --help");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  berth::testing::expect_contains(run.output, {"--tokenizer", "--truncation", "longest_first", "--padding",
                                               "--no-special-tokens", "--max-length"});
}

}  // namespace
