// LabelMap: ids from observed labels, fixed maps, HF's id2label/label2id JSON both ways, bad maps.
#include "berth/data/label_map.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {

using berth::data::LabelMap;
using berth::testing::error_text;
using berth::testing::expect_contains;

TEST(LabelMap, ObservedStringsSortBytewiseWhateverTheirOrder) {
  LabelMap map = LabelMap::from_observed({"spam", "ham", "spam", "Eggs"});
  EXPECT_EQ(map.labels(), (std::vector<std::string>{"Eggs", "ham", "spam"}));
  EXPECT_EQ(map, LabelMap::from_observed({"ham", "Eggs", "spam"}));
  EXPECT_EQ(map.find("ham"), 1);
  EXPECT_EQ(map.find("bacon"), std::nullopt);
  EXPECT_EQ(map.label(2), "spam");
}

TEST(LabelMap, ObservedIntegersSortNumerically) {
  EXPECT_EQ(LabelMap::from_observed({"10", "2", "-1", "2"}).labels(),
            (std::vector<std::string>{"-1", "2", "10"}));
  // One non-integer makes the order bytewise for all.
  EXPECT_EQ(LabelMap::from_observed({"10", "2", "x"}).labels(), (std::vector<std::string>{"10", "2", "x"}));
}

TEST(LabelMap, JsonHasHfShapeWithStringKeysInIdOrder) {
  std::vector<std::string> labels;
  for (int i = 0; i < 12; ++i) labels.push_back("L" + std::to_string(i));
  const std::string text = LabelMap(labels).to_json();
  // "10" after "9": id order, not the key order a sorted map would give.
  EXPECT_LT(text.find("\"9\":\"L9\""), text.find("\"10\":\"L10\"")) << text;
  auto json = nlohmann::json::parse(text);
  EXPECT_EQ(json["id2label"]["0"], "L0");
  EXPECT_EQ(json["label2id"]["L11"], 11);
  EXPECT_EQ(LabelMap::from_json(text, "x.json"), LabelMap(labels));
}

TEST(LabelMap, ReadsEitherHalfOfAConfig) {
  const LabelMap expected({"neg", "pos"});
  EXPECT_EQ(LabelMap::from_json(R"({"hidden_size": 8, "id2label": {"1": "pos", "0": "neg"}})", "c"),
            expected);
  EXPECT_EQ(LabelMap::from_json(R"({"label2id": {"pos": 1, "neg": 0}})", "c"), expected);
}

TEST(LabelMap, BadMapsNameTheProblem) {
  expect_contains(error_text([] { LabelMap({"a", "b", "a"}); }), {"label 'a' appears twice (ids 0 and 2)"});
  expect_contains(error_text([] { LabelMap::from_json("{", "config.json"); }),
                  {"config.json: expected JSON with id2label/label2id, found invalid JSON"});
  expect_contains(error_text([] { LabelMap::from_json(R"({"num_labels": 2})", "config.json"); }),
                  {"config.json: expected \"id2label\" or \"label2id\", found neither"});
  expect_contains(error_text([] { LabelMap::from_json(R"({"id2label": {"0": "a", "2": "b"}})", "c.json"); }),
                  {"c.json: label ids must be 0..1, found id 2 where 1 was expected"});
  expect_contains(error_text([] { LabelMap::from_json(R"({"id2label": {"zero": "a"}})", "c.json"); }),
                  {"id2label key 'zero' is not an integer id"});
  expect_contains(error_text([] {
                    LabelMap::from_json(R"({"id2label": {"0": "a", "1": "b"}, "label2id": {"a": 1, "b": 0}})",
                                        "c.json");
                  }),
                  {"c.json: id2label and label2id disagree"});
  expect_contains(error_text([] { LabelMap::from_json(R"({"label2id": {"a": 0, "b": 0}})", "c.json"); }),
                  {"label2id gives id 0 to both 'a' and 'b'"});
  expect_contains(error_text([] { LabelMap({"a"}).label(3); }), {"label id 3 is out of range", "ids 0..0"});
}

}  // namespace
