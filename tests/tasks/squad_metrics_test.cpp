// SQuAD's exact match and F1. No package in this project's pinned environment ships the official evaluation
// scripts offline (HF's `evaluate` loads its squad metric from the Hub, which tests cannot reach), so each
// expected value here follows from the scripts' definitions by the reasoning written beside it.
#include "berth/train/squad_metrics.h"

#include <gtest/gtest.h>

namespace berth::train {
namespace {

TEST(SquadMetrics, NormalizesAsTheOfficialScript) {
  // lower, remove string.punctuation, remove the words a/an/the, collapse whitespace.
  EXPECT_EQ(normalize_answer("  The  Eiffel-Tower, in PARIS! "), "eiffeltower in paris");
  // Articles only as whole words: "another" and "theatre" keep theirs; "an" between spaces goes.
  EXPECT_EQ(normalize_answer("another theatre an apple"), "another theatre apple");
  // Punctuation goes before the articles: "the." becomes "the", then an article.
  EXPECT_EQ(normalize_answer("the. end"), "end");
  EXPECT_EQ(normalize_answer("Zürich"), "zürich");  // non-ASCII kept as is
}

TEST(SquadMetrics, ExactMatchAndF1OfOneAnswer) {
  EXPECT_EQ(squad_exact_match("The Beatles", "beatles"), 1.0);
  EXPECT_EQ(squad_exact_match("Beatles band", "beatles"), 0.0);
  // prediction {beatles, band}, truth {beatles}: 1 common word, precision 1/2, recall 1/1, F1 2/3.
  EXPECT_DOUBLE_EQ(squad_f1("Beatles band", "the Beatles"), 2.0 / 3.0);
  // Repeated words count as often as both sides have them: {a,b,b} vs {b,b,c}: common 2, P = R = 2/3.
  EXPECT_DOUBLE_EQ(squad_f1("x y y", "y y z"), 2.0 / 3.0);
  EXPECT_EQ(squad_f1("cat", "dog"), 0.0);
  EXPECT_EQ(squad_f1("", "dog"), 0.0);  // v1.1: no common word, 0
}

TEST(SquadMetrics, BestOverGoldAnswersAsPercentages) {
  // Example 1: exact against its second gold answer (1, F1 1). Example 2: "big red" against "red": EM 0,
  // F1 2*(1/2*1)/(1/2+1) = 2/3; against "small": 0. Means: EM 50, F1 (1 + 2/3) / 2 * 100 = 83.33...
  const auto metrics = squad_metrics({"Paris", "big red"}, {{"London", "paris"}, {"small", "red"}});
  EXPECT_DOUBLE_EQ(metrics.at("exact_match"), 50.0);
  EXPECT_DOUBLE_EQ(metrics.at("f1"), 100.0 * (1.0 + 2.0 / 3.0) / 2.0);
}

TEST(SquadMetrics, V2ScoresNoAnswerQuestions) {
  // Example 1 answerable, answered right (1, 1). Example 2 unanswerable (gold [""]), answered "" (1, 1: both
  // empty). Example 3 unanswerable, answered "blue" (0, and F1 0 since one side is empty). Example 4
  // answerable ("red car"), answered "" (0, 0).
  const auto metrics = squad_v2_metrics({"red", "", "blue", ""}, {{"red"}, {}, {}, {"red car"}});
  EXPECT_DOUBLE_EQ(metrics.at("exact"), 50.0);
  EXPECT_DOUBLE_EQ(metrics.at("f1"), 50.0);
  EXPECT_DOUBLE_EQ(metrics.at("total"), 4.0);
  EXPECT_DOUBLE_EQ(metrics.at("HasAns_exact"), 50.0);
  EXPECT_DOUBLE_EQ(metrics.at("HasAns_total"), 2.0);
  EXPECT_DOUBLE_EQ(metrics.at("NoAns_exact"), 50.0);
  EXPECT_DOUBLE_EQ(metrics.at("NoAns_f1"), 50.0);
  // A gold answer that normalises to nothing ("the") counts as no answer.
  EXPECT_DOUBLE_EQ(squad_v2_metrics({""}, {{"The"}}).at("NoAns_exact"), 100.0);
}

}  // namespace
}  // namespace berth::train
