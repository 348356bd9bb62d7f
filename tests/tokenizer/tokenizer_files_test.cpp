// Tokenizer directories: HF's bert-base-uncased files, vocab.txt-only directories, refusals of what berth
// does not implement, and save -> load round trips that keep HF's tokenizer.json content.
#include "berth/tokenizer/tokenizer_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {

using namespace berth::tokenizer;
using nlohmann::json;

json read(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

const char* kSample = "Hello, Caf\xC3\xA9 [MASK] \xE4\xB8\xAD\xE6\x96\x87 unaffable!";

TEST(TokenizerFiles, JsonAndVocabTxtGiveTheSameTokenizer) {
  const std::string dir = berth::testing::bert_base_uncased_dir();
  WordPieceTokenizer from_json = load_tokenizer(dir);
  berth::testing::TempDir vocab_only;
  std::filesystem::copy_file(dir + "/vocab.txt", vocab_only.file("vocab.txt"));
  std::filesystem::copy_file(dir + "/tokenizer_config.json", vocab_only.file("tokenizer_config.json"));
  WordPieceTokenizer from_vocab = load_tokenizer(vocab_only.path().string());
  Encoding a = from_json.encode(kSample, std::string_view("pair text"));
  Encoding b = from_vocab.encode(kSample, std::string_view("pair text"));
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(from_json.token_id("[PAD]"), 0);
  EXPECT_EQ(from_vocab.token_id("[CLS]"), 101);
}

TEST(TokenizerFiles, ConfigSettingsAndSpecialTokenTextsAreRead) {
  berth::testing::TempDir dir;
  write(dir.file("vocab.txt"), "<unk>\n<cls>\n<sep>\n<pad>\nhello\n\xC3\xA9t\xC3\xA9\n");
  write(dir.file("tokenizer_config.json"),
        R"({"do_lower_case": false, "model_max_length": 128, "unk_token": "<unk>", "cls_token": "<cls>",
            "sep_token": {"content": "<sep>", "__type": "AddedToken"}, "pad_token": "<pad>"})");
  WordPieceTokenizer t = load_tokenizer(dir.path().string());
  EXPECT_EQ(t.model_max_length, 128u);
  EXPECT_FALSE(t.normalizer().options().lowercase);
  EXPECT_EQ(t.encode("hello \xC3\xA9t\xC3\xA9 Hello").ids, (std::vector<int64_t>{1, 4, 5, 0, 2}));
}

TEST(TokenizerFiles, SpecialTokensAreLookedUpByText) {
  berth::testing::TempDir dir;
  write(dir.file("vocab.txt"), "[UNK]\nhello\n[CLS]\n[SEP]\n");  // no [PAD], no [MASK]: fine until needed
  WordPieceTokenizer t = load_tokenizer(dir.path().string());
  EXPECT_EQ(t.encode("hello").ids, (std::vector<int64_t>{2, 1, 3}));
  write(dir.file("vocab.txt"), "[UNK]\nhello\n[SEP]\n");
  std::string text = berth::testing::error_text([&] { load_tokenizer(dir.path().string()); });
  berth::testing::expect_contains(text, {"cls token '[CLS]' is not in the vocabulary", "Fix:"});
}

TEST(TokenizerFiles, UnsupportedModelOrNormalizerIsNamed) {
  berth::testing::TempDir dir;
  json j = read(berth::testing::bert_base_uncased_dir() + "/tokenizer.json");
  j["model"]["type"] = "BPE";
  write(dir.file("tokenizer.json"), j.dump());
  std::string text = berth::testing::error_text([&] { load_tokenizer(dir.path().string()); });
  berth::testing::expect_contains(text, {"tokenizer.json", "model type 'BPE' is not supported", "WordPiece"});

  j = read(berth::testing::bert_base_uncased_dir() + "/tokenizer.json");
  j["normalizer"] = {{"type", "NFKC"}};
  write(dir.file("tokenizer.json"), j.dump());
  text = berth::testing::error_text([&] { load_tokenizer(dir.path().string()); });
  berth::testing::expect_contains(text, {"normalizer type 'NFKC' is not supported", "BertNormalizer"});

  j = read(berth::testing::bert_base_uncased_dir() + "/tokenizer.json");
  j["added_tokens"][0]["lstrip"] = true;
  write(dir.file("tokenizer.json"), j.dump());
  text = berth::testing::error_text([&] { load_tokenizer(dir.path().string()); });
  berth::testing::expect_contains(text, {"added token '[PAD]' sets lstrip=true", "Fix:"});
}

TEST(TokenizerFiles, BrokenFilesNameTheFile) {
  berth::testing::TempDir dir;
  write(dir.file("tokenizer.json"), "{ not json");
  berth::testing::expect_contains(berth::testing::error_text([&] { load_tokenizer(dir.path().string()); }),
                                  {"tokenizer.json", "not valid JSON"});
  berth::testing::TempDir empty;
  berth::testing::expect_contains(berth::testing::error_text([&] { load_tokenizer(empty.path().string()); }),
                                  {"holds neither tokenizer.json nor vocab.txt", "Fix:"});
  berth::testing::expect_contains(berth::testing::error_text([&] { load_tokenizer(empty.file("missing")); }),
                                  {"does not exist"});
}

TEST(TokenizerFiles, SavedTokenizerJsonHasHfContent) {
  WordPieceTokenizer t = load_tokenizer(berth::testing::bert_base_uncased_dir());
  berth::testing::TempDir dir;
  save_tokenizer(t, dir.path().string());
  json saved = read(dir.file("tokenizer.json"));
  json original = read(berth::testing::bert_base_uncased_dir() + "/tokenizer.json");
  original["model"]["type"] = "WordPiece";  // HF's file leaves it out; berth writes it, as HF now does
  for (const char* section :
       {"normalizer", "pre_tokenizer", "post_processor", "model", "truncation", "padding"})
    EXPECT_TRUE(saved[section] == original[section]) << section << " differs";  // not printed: 30k tokens
  // Same tokens and flags; HF writes the keys in another order, which JSON objects ignore.
  EXPECT_EQ(saved["added_tokens"], original["added_tokens"]);
  std::ifstream a(dir.file("vocab.txt")), b(berth::testing::bert_base_uncased_dir() + "/vocab.txt");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
            std::string(std::istreambuf_iterator<char>(b), {}));
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();  // no temporary left
}

TEST(TokenizerFiles, SaveThenLoadKeepsSettingsAndEncodings) {
  WordPieceTokenizer t =
      WordPieceTokenizer::bert(WordPiece::from_file(berth::testing::bert_base_uncased_dir() + "/vocab.txt"),
                               {true, false, true, false});
  t.set_truncation(TruncationOptions{12, TruncationStrategy::OnlyFirst, Side::Left});
  PaddingOptions padding;
  padding.strategy = PaddingStrategy::MaxLength;
  padding.max_length = 16;
  t.set_padding(padding);
  t.model_max_length = 256;
  berth::testing::TempDir dir;
  save_tokenizer(t, dir.path().string());
  WordPieceTokenizer loaded = load_tokenizer(dir.path().string());
  EXPECT_EQ(loaded.model_max_length, 256u);
  ASSERT_TRUE(loaded.truncation() && loaded.padding());
  EXPECT_EQ(loaded.truncation()->strategy, TruncationStrategy::OnlyFirst);
  EXPECT_EQ(loaded.padding()->max_length, 16u);
  Encoding a = t.encode(kSample, std::string_view("and a pair")),
           b = loaded.encode(kSample, std::string_view("and a pair"));
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.size(), 16u);
}

}  // namespace
