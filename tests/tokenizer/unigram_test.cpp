// The Unigram model against HF tokenizers: the vocabulary HF's UnigramTrainer learnt from emails (plain, and
// with <0xXX> byte tokens and byte_fallback) on every distinct pre-tokenized piece of every case, of 504
// emails and of edge pieces, ids and byte offsets compared exactly; and what berth says about bad JSON.
#include "berth/tokenizer/unigram.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/tokenizer/component_json.h"
#include "support/normalizer_goldens.h"

namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;
using namespace berth::tokenizer;

std::unique_ptr<TokenModel> unigram_golden_model(const std::string& family) {
  std::ifstream in(berth::testing::unigram_golden_dir() + "/" + family + ".json");
  if (!in) {
    ADD_FAILURE() << "missing golden " << berth::testing::unigram_golden_dir() << "/" << family << ".json";
    return nullptr;
  }
  return token_model_from_json(nlohmann::json::parse(in)["model"].dump());
}

class UnigramGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(UnigramGolden, EveryPieceOfEveryCaseAndEmail) {
  const auto model = unigram_golden_model(GetParam());
  ASSERT_TRUE(model);
  size_t compared = 0, failures = 0;
  std::vector<ModelToken> tokens;
  for (const auto& line :
       berth::testing::read_jsonl(berth::testing::unigram_golden_dir() + "/unigram_pieces.jsonl")) {
    if (line["family"] != GetParam()) continue;
    const std::string piece = line["piece"];
    tokens.clear();
    model->tokenize(piece, tokens);
    std::vector<int64_t> ids, offsets;
    for (const ModelToken& t : tokens)
      ids.push_back(t.id), offsets.push_back(t.begin), offsets.push_back(t.end);
    if ((ids != line["ids"].get<std::vector<int64_t>>() ||
         offsets != line["offsets"].get<std::vector<int64_t>>()) &&
        ++failures <= 5)
      ADD_FAILURE() << GetParam() << " " << nlohmann::json(piece).dump() << ": berth ids "
                    << berth::testing::show(ids) << " offsets " << berth::testing::show(offsets)
                    << ", HF ids " << line["ids"].dump() << " offsets " << line["offsets"].dump();
    ++compared;
  }
  EXPECT_EQ(failures, 0u) << GetParam() << ": pieces that differ from HF, of " << compared;
  EXPECT_GT(compared, 20000u);
}

INSTANTIATE_TEST_SUITE_P(Families, UnigramGolden, ::testing::Values("xlmr-unigram", "unigram-byte-fallback"));

// Repeated pieces, the unk piece's own text fused with unknown code points, ties, byte tokens, no unk_id, an
// empty piece: small models whose tokens (or refusals) HF computed.
TEST(UnigramGolden, CornersOfSmallModels) {
  size_t compared = 0, failures = 0;
  for (const auto& line :
       berth::testing::read_jsonl(berth::testing::unigram_golden_dir() + "/unigram_edge_models.jsonl")) {
    const std::string model_json = line["model"].dump();
    if (line.contains("error")) {
      EXPECT_FALSE(error_text([&] { token_model_from_json(model_json); }).empty())
          << "HF refuses " << model_json << " (" << line["error"] << ")";
      ++compared;
      continue;
    }
    const auto model = token_model_from_json(model_json);
    for (const auto& want : line["pieces"]) {
      const std::string piece = want["piece"];
      std::vector<ModelToken> tokens;
      ++compared;
      if (want.contains("error")) {
        EXPECT_FALSE(error_text([&] { model->tokenize(piece, tokens); }).empty())
            << "HF refuses " << piece << " with " << model_json.substr(0, 200);
        continue;
      }
      model->tokenize(piece, tokens);
      std::vector<int64_t> ids, offsets;
      for (const ModelToken& t : tokens)
        ids.push_back(t.id), offsets.push_back(t.begin), offsets.push_back(t.end);
      if ((ids != want["ids"].get<std::vector<int64_t>>() ||
           offsets != want["offsets"].get<std::vector<int64_t>>()) &&
          ++failures <= 10)
        ADD_FAILURE() << nlohmann::json(piece).dump() << " with " << model_json.substr(0, 200)
                      << ": berth ids " << berth::testing::show(ids) << " offsets "
                      << berth::testing::show(offsets) << ", HF " << want.dump();
    }
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(compared, 100u);
}

TEST(Unigram, BestPathAndFusedUnknownsAsHfsOwnExample) {
  // HF's doc example for Unigram::encode: "abcdacdxx" is abcd, a, cd, then the two unknown x as one token.
  const Unigram model({{"<unk>", 0.0},
                       {"a", 0.0},
                       {"b", 0.0},
                       {"c", 0.0},
                       {"d", 0.0},
                       {"cd", 1.0},
                       {"ab", 2.0},
                       {"abc", 5.0},
                       {"abcd", 10.0}},
                      0, false);
  std::vector<ModelToken> tokens;
  model.tokenize("abcdacdxx", tokens);
  std::vector<std::tuple<int64_t, uint32_t, uint32_t>> got;
  for (const auto& t : tokens) got.emplace_back(t.id, t.begin, t.end);
  EXPECT_EQ(got, (std::vector<std::tuple<int64_t, uint32_t, uint32_t>>{
                     {8, 0, 4}, {1, 4, 5}, {5, 5, 7}, {0, 7, 9}}));
  EXPECT_EQ(model.token_to_id("cd"), 5);
  EXPECT_EQ(model.id_to_token(8), "abcd");
  EXPECT_EQ(model.id_to_token(9), "");
  EXPECT_EQ(model.vocab_size(), 9u);
}

TEST(Unigram, RefusesBadJsonWithTheJsonPath) {
  const auto message = [](const std::string& json) {
    return error_text([&] { token_model_from_json(json); });
  };
  expect_contains(message(R"({"type": "Foo", "vocab": []})"),
                  {"model.type", "\"Foo\"", "is not a model berth knows", "Unigram"});
  expect_contains(message(R"({"type": "Unigram", "unk_id": 0, "vocab": {"<unk>": 0.0}})"),
                  {"model.vocab", "expected a list of [piece, score] pairs", "found object", "Fix:"});
  expect_contains(message(R"({"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", "x"]]})"),
                  {"model.vocab[1]", "expected [\"piece\", score]", "[\"a\",\"x\"]"});
  expect_contains(message(R"({"type": "Unigram", "unk_id": 2, "vocab": [["<unk>", 0.0], ["a", -1.0]]})"),
                  {"model.unk_id", "2 is not a piece of the vocabulary (ids 0..1)", "Fix:"});
  expect_contains(message(R"({"type": "Unigram", "unk_id": -1, "vocab": [["<unk>", 0.0]]})"),
                  {"model.unk_id", "expected the unk token's id", "found -1"});
  expect_contains(message(R"({"type": "Unigram", "unk_id": 0, "vocab": []})"),
                  {"model.vocab", "empty", "Fix:"});
  expect_contains(message(R"({"type": "Unigram", "unk_id": 0})"), {"model.vocab", "missing"});
  expect_contains(
      message(R"({"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]], "byte_fallback": 1})"),
      {"model.byte_fallback", "unexpected number"});
}

TEST(Unigram, AnUnknownCharacterWithoutUnkIdIsAnError) {
  // HF refuses it too ("Encountered an unknown token but `unk_id` is missing").
  const auto model = token_model_from_json(R"({"type": "Unigram", "unk_id": null, "vocab": [["a", -1.0]]})");
  std::vector<ModelToken> tokens;
  model->tokenize("aa", tokens);
  EXPECT_EQ(tokens.size(), 2u);
  expect_contains(error_text([&] { model->tokenize("ab", tokens); }),
                  {"model", "\"ab\"", "no token covers", "unk_id is null", "Fix:"});
}

}  // namespace
