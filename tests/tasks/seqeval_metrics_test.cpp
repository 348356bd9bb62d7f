// seqeval_metrics against the real seqeval (tests/goldens/seqeval_goldens.py): entities, precision, recall,
// F1 and accuracy on edge and random tag sequences, and the same numbers through token_classification_metrics
// from logits and -100-padded labels.
#include "berth/train/seqeval_metrics.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {

using Tags = std::vector<std::vector<std::string>>;

nlohmann::json seqeval_golden_cases() {
  std::ifstream in(berth::testing::golden_dir() + "/train/seqeval.json");
  EXPECT_TRUE(in.good()) << "missing seqeval golden (scripts/setup installs seqeval, the build writes it)";
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json::array();
}

TEST(SeqevalMetrics, ScoresAndEntitiesMatchSeqeval) {
  const nlohmann::json cases = seqeval_golden_cases();
  ASSERT_GE(cases.size(), 300u);
  for (const auto& c : cases) {
    const auto truth = c["truth"].get<Tags>();
    const auto predicted = c["predicted"].get<Tags>();
    const berth::train::SeqevalScores s = berth::train::seqeval_scores(truth, predicted);
    const std::string what = c["truth"].dump() + " vs " + c["predicted"].dump();
    EXPECT_NEAR(s.precision, c["precision"].get<double>(), 1e-12) << what;
    EXPECT_NEAR(s.recall, c["recall"].get<double>(), 1e-12) << what;
    EXPECT_NEAR(s.f1, c["f1"].get<double>(), 1e-12) << what;
    EXPECT_NEAR(s.accuracy, c["accuracy"].get<double>(), 1e-12) << what;
    std::vector<berth::train::SeqevalEntity> expected;
    for (const auto& e : c["entities"])
      expected.push_back({e[0].get<std::string>(), e[1].get<int64_t>(), e[2].get<int64_t>()});
    EXPECT_EQ(berth::train::seqeval_entities(truth), expected) << what;
  }
}

// The golden cases as a model's output: one-hot logits at the predicted tags, labels -100 past each row's
// end and on every other position (as later sub-tokens are), which the metrics must skip.
TEST(SeqevalMetrics, TokenClassificationMetricsSkipIgnoredPositions) {
  const nlohmann::json cases = seqeval_golden_cases();
  std::vector<std::string> names;
  const auto id = [&](const std::string& tag) {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == tag) return static_cast<int64_t>(i);
    names.push_back(tag);
    return static_cast<int64_t>(names.size() - 1);
  };
  size_t checked = 0;
  for (const auto& c : cases) {
    const auto truth = c["truth"].get<Tags>();
    const auto predicted = c["predicted"].get<Tags>();
    size_t longest = 0;
    for (const auto& row : truth) longest = std::max(longest, row.size());
    if (longest == 0) continue;
    const auto rows = static_cast<int64_t>(truth.size());
    const auto length = static_cast<int64_t>(2 * longest + 1);
    at::Tensor labels = at::full({rows, length}, -100, at::kLong);
    at::Tensor predicted_ids = at::zeros({rows, length}, at::kLong);
    for (int64_t r = 0; r < rows; ++r)
      for (size_t t = 0; t < truth[static_cast<size_t>(r)].size(); ++t) {
        labels[r][static_cast<int64_t>(2 * t + 1)] = id(truth[static_cast<size_t>(r)][t]);
        predicted_ids[r][static_cast<int64_t>(2 * t + 1)] = id(predicted[static_cast<size_t>(r)][t]);
      }
    // Enough classes for every tag seen so far; -100 logits on the ignored positions, as eval padding leaves.
    const auto classes = static_cast<int64_t>(names.size());
    at::Tensor logits = at::one_hot(predicted_ids, classes).to(at::kFloat);
    logits.masked_fill_(labels.eq(-100).unsqueeze(-1), -100.0f);
    const auto metrics = berth::train::token_classification_metrics(logits, labels, names);
    EXPECT_NEAR(metrics.at("precision"), c["precision"].get<double>(), 1e-12);
    EXPECT_NEAR(metrics.at("recall"), c["recall"].get<double>(), 1e-12);
    EXPECT_NEAR(metrics.at("f1"), c["f1"].get<double>(), 1e-12);
    EXPECT_NEAR(metrics.at("accuracy"), c["accuracy"].get<double>(), 1e-12);
    ++checked;
  }
  EXPECT_GT(checked, 250u);
}

}  // namespace
