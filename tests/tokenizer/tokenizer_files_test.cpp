// Tokenizer directories: HF's bert-base-uncased files, vocab.txt-only directories, tokenizer_config.json
// applied as transformers applies it, what berth says of broken files, and save -> load round trips.
#include "berth/tokenizer/tokenizer_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "support/tokenizer_goldens.h"

namespace {

using namespace berth::tokenizer;
using berth::testing::error_text;
using berth::testing::expect_contains;
using nlohmann::json;

json read(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string tokenizer_files_read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void tokenizer_files_write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

const char* kSample = "Hello, Caf\xC3\xA9 [MASK] \xE4\xB8\xAD\xE6\x96\x87 unaffable!";

TEST(TokenizerFiles, JsonAndVocabTxtGiveTheSameTokenizer) {
  const std::string dir = berth::testing::bert_base_uncased_dir();
  const Tokenizer from_json = load_tokenizer(dir);
  berth::testing::TempDir vocab_only;
  std::filesystem::copy_file(dir + "/vocab.txt", vocab_only.file("vocab.txt"));
  std::filesystem::copy_file(dir + "/tokenizer_config.json", vocab_only.file("tokenizer_config.json"));
  const Tokenizer from_vocab = load_tokenizer(vocab_only.path().string());
  const Encoding a = from_json.encode(kSample, std::string_view("pair text"));
  const Encoding b = from_vocab.encode(kSample, std::string_view("pair text"));
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.type_ids, b.type_ids);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(from_json.pad_token_id(), 0);  // BertTokenizerFast's defaults for the roles
  EXPECT_EQ(from_vocab.token_id("[CLS]"), 101);
  EXPECT_EQ(from_json.special_tokens.mask, "[MASK]");
  EXPECT_EQ(from_json.vocab_size(), 30522u);
  EXPECT_EQ(from_json.model_type(), "WordPiece");
}

TEST(TokenizerFiles, ConfigSettingsAndSpecialTokenTextsAreRead) {
  berth::testing::TempDir dir;
  tokenizer_files_write(dir.file("vocab.txt"), "<unk>\n<cls>\n<sep>\n<pad>\nhello\n\xC3\xA9t\xC3\xA9\n");
  tokenizer_files_write(
      dir.file("tokenizer_config.json"),
      R"({"do_lower_case": false, "model_max_length": 128, "unk_token": "<unk>", "cls_token": "<cls>",
            "sep_token": {"content": "<sep>", "__type": "AddedToken"}, "pad_token": "<pad>"})");
  const Tokenizer t = load_tokenizer(dir.path().string());
  EXPECT_EQ(t.model_max_length, 128u);
  EXPECT_EQ(t.special_tokens.sep, "<sep>");
  EXPECT_EQ(t.pad_token_id(), 3);
  // Cased (do_lower_case false): "Hello" is unknown, "hello" is not.
  EXPECT_EQ(t.encode("hello \xC3\xA9t\xC3\xA9 Hello").ids, (std::vector<int64_t>{1, 4, 5, 0, 2}));
}

TEST(TokenizerFiles, TheConfigsLowercaseWinsOverTokenizerJson) {
  // transformers' BertTokenizerFast: tokenizer_config.json's do_lower_case rewrites the BertNormalizer.
  berth::testing::TempDir dir;
  std::filesystem::copy_file(berth::testing::bert_base_uncased_dir() + "/tokenizer.json",
                             dir.file("tokenizer.json"));
  tokenizer_files_write(dir.file("tokenizer_config.json"), R"({"do_lower_case": false})");
  const Tokenizer cased = load_tokenizer(dir.path().string());
  const Tokenizer uncased = load_tokenizer(berth::testing::bert_base_uncased_dir());
  EXPECT_EQ(cased.encode("Hello", std::nullopt, false).ids, (std::vector<int64_t>{100}));  // [UNK]
  EXPECT_EQ(uncased.encode("Hello", std::nullopt, false).ids, (std::vector<int64_t>{7592}));
}

// transformers' AutoTokenizer on directories whose tokenizer_config.json matters (goldens written at build
// time by transformers_tokenizer_goldens.py): every case, single and paired, ids, type ids, mask, offsets and
// word ids.
TEST(TokenizerFiles, DirectoriesLoadAsTransformersLoadsThem) {
  const std::string root = berth::testing::golden_dir() + "/transformers_tokenizers/";
  const auto cases =
      berth::testing::read_jsonl(berth::testing::source_dir() + "/tests/goldens/tokenizer_cases.jsonl");
  std::ifstream stamp(root + "stamp");
  ASSERT_TRUE(stamp) << "missing goldens in " << root;
  size_t compared = 0;
  for (std::string name; std::getline(stamp, name);) {
    const Tokenizer t = load_tokenizer(root + name);
    const auto expected = berth::testing::read_jsonl(root + name + "/expected.jsonl");
    ASSERT_EQ(expected.size(), cases.size() + 1) << name;
    const nlohmann::json& head = expected[0];
    EXPECT_EQ(t.special_tokens.pad,
              head["pad_token"].is_null() ? std::nullopt : std::optional<std::string>(head["pad_token"]))
        << name;
    EXPECT_EQ(t.model_max_length, head["model_max_length"].is_null()
                                      ? std::nullopt
                                      : std::optional<size_t>(head["model_max_length"].get<size_t>()))
        << name;
    for (size_t i = 1; i < expected.size(); ++i) {
      const nlohmann::json& c = cases[expected[i]["case"].get<size_t>()];
      std::optional<std::string> pair;
      // transformers takes an empty text_pair for none (Python's truthiness); the goldens called it so.
      if (c.contains("text_pair") && !c["text_pair"].get<std::string>().empty())
        pair = c["text_pair"].get<std::string>();
      const Encoding e = t.encode(c["text"].get<std::string>(),
                                  pair ? std::optional<std::string_view>(*pair) : std::nullopt);
      const std::string diff = berth::testing::encoding_difference(e, expected[i]);
      EXPECT_EQ(diff, "") << name << " case " << c.dump();
      ++compared;
    }
  }
  EXPECT_GT(compared, 400u);
}

TEST(TokenizerFiles, AddBosAndEosTokensLeaveTokenizerJsonsTemplate) {
  // As transformers 5: tokenizer.json's post_processor decides (the goldens above check Llama 2's too).
  berth::testing::TempDir dir;
  tokenizer_files_write(
      dir.file("tokenizer.json"),
      R"({"model": {"type": "WordLevel", "vocab": {"<s>": 0, "</s>": 1, "a": 2, "b": 3}, "unk_token": "a"},
            "pre_tokenizer": {"type": "WhitespaceSplit"},
            "added_tokens": [{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "</s>", "special": true}]})");
  tokenizer_files_write(
      dir.file("tokenizer_config.json"),
      R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true, "add_eos_token": true})");
  const Tokenizer t = load_tokenizer(dir.path().string());
  EXPECT_EQ(t.encode("a b").ids, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.special_tokens.eos, "</s>");
  EXPECT_EQ(t.token_id(*t.special_tokens.bos), 0);
}

TEST(TokenizerFiles, SpecialTokensAreLookedUpByText) {
  berth::testing::TempDir dir;
  tokenizer_files_write(dir.file("vocab.txt"),
                        "[UNK]\nhello\n[CLS]\n[SEP]\n");  // no [PAD], no [MASK]: fine until needed
  const Tokenizer t = load_tokenizer(dir.path().string());
  EXPECT_EQ(t.encode("hello").ids, (std::vector<int64_t>{2, 1, 3}));
  expect_contains(error_text([&] { t.pad_token_id(); }), {"no token \"[PAD]\"", "Fix:"});
  tokenizer_files_write(dir.file("vocab.txt"), "[UNK]\nhello\n[SEP]\n");
  expect_contains(error_text([&] { load_tokenizer(dir.path().string()); }),
                  {"vocab.txt", "has no \"[CLS]\"", "Fix:"});
}

TEST(TokenizerFiles, UnknownComponentsAreNamedWithTheirPath) {
  berth::testing::TempDir dir;
  json j = read(berth::testing::bert_base_uncased_dir() + "/tokenizer.json");
  j["normalizer"] = {{"type", "Foo"}};
  tokenizer_files_write(dir.file("tokenizer.json"), j.dump());
  expect_contains(error_text([&] { load_tokenizer(dir.path().string()); }),
                  {"tokenizer.json", "normalizer.type", "\"Foo\" is not a normalizer berth knows", "Fix:"});
}

TEST(TokenizerFiles, BrokenFilesNameTheFile) {
  berth::testing::TempDir dir;
  tokenizer_files_write(dir.file("tokenizer.json"), "{ not json");
  expect_contains(error_text([&] { load_tokenizer(dir.path().string()); }),
                  {"tokenizer.json", "not valid JSON"});
  tokenizer_files_write(
      dir.file("tokenizer.json"),
      tokenizer_files_read_text(berth::testing::bert_base_uncased_dir() + "/tokenizer.json"));
  tokenizer_files_write(dir.file("tokenizer_config.json"), R"({"model_max_length": "long"})");
  expect_contains(error_text([&] { load_tokenizer(dir.path().string()); }),
                  {"tokenizer_config.json", "\"model_max_length\" has the wrong type", "Fix:"});
  berth::testing::TempDir empty;
  expect_contains(error_text([&] { load_tokenizer(empty.path().string()); }),
                  {"holds neither tokenizer.json nor vocab.txt", "Fix:"});
  expect_contains(error_text([&] { load_tokenizer(empty.file("missing")); }), {"does not exist"});
}

TEST(TokenizerFiles, SavedFilesKeepHfContent) {
  const Tokenizer t = load_tokenizer(berth::testing::bert_base_uncased_dir());
  berth::testing::TempDir dir;
  save_tokenizer(t, dir.path().string());
  json saved = read(dir.file("tokenizer.json"));
  json original = read(berth::testing::bert_base_uncased_dir() + "/tokenizer.json");
  EXPECT_TRUE(saved == original);  // not printed: 30k tokens
  EXPECT_EQ(tokenizer_files_read_text(dir.file("vocab.txt")),
            tokenizer_files_read_text(berth::testing::bert_base_uncased_dir() + "/vocab.txt"));
  EXPECT_EQ(read(dir.file("tokenizer_config.json"))["do_lower_case"], true);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();  // no temporary left
}

TEST(TokenizerFiles, SaveThenLoadKeepsSettingsAndEncodings) {
  berth::testing::TempDir vocab_only;
  std::filesystem::copy_file(berth::testing::bert_base_uncased_dir() + "/vocab.txt",
                             vocab_only.file("vocab.txt"));
  tokenizer_files_write(vocab_only.file("tokenizer_config.json"),
                        R"({"do_lower_case": true, "strip_accents": false})");
  Tokenizer t = load_tokenizer(vocab_only.path().string());
  TruncationOptions truncation;
  truncation.max_length = 12;
  truncation.strategy = TruncationStrategy::OnlyFirst;
  truncation.direction = Side::Left;
  t.set_truncation(truncation);
  PaddingOptions padding;
  padding.strategy = PaddingStrategy::MaxLength;
  padding.max_length = 16;
  t.set_padding(padding);
  t.model_max_length = 256;
  berth::testing::TempDir dir;
  save_tokenizer(t, dir.path().string());
  const Tokenizer loaded = load_tokenizer(dir.path().string());
  EXPECT_EQ(loaded.model_max_length, 256u);
  ASSERT_TRUE(loaded.truncation() && loaded.padding());
  EXPECT_EQ(loaded.truncation()->strategy, TruncationStrategy::OnlyFirst);
  EXPECT_EQ(loaded.padding()->max_length, 16u);
  const Encoding a = t.encode(kSample, std::string_view("and a pair")),
                 b = loaded.encode(kSample, std::string_view("and a pair"));
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.size(), 16u);
  // The accents stay (strip_accents false), in the saved tokenizer.json itself too.
  EXPECT_EQ(read(dir.file("tokenizer.json"))["normalizer"]["strip_accents"], false);
}

}  // namespace
