// Tests for the evaluation metrics: hand-derivable cases, and PyTorch goldens of sklearn's definitions.
#include "berth/train/metrics.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace berth::train {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;

// Logits whose argmax is `predicted` for each row (C classes).
at::Tensor logits_for(const std::vector<int64_t>& predicted, int64_t classes) {
  at::Tensor logits = torch::zeros({static_cast<int64_t>(predicted.size()), classes});
  for (size_t i = 0; i < predicted.size(); ++i) logits[static_cast<int64_t>(i)][predicted[i]] = 1.0;
  return logits;
}

at::Tensor labels_of(const std::vector<int64_t>& labels) { return torch::tensor(labels, torch::kLong); }

TEST(MetricsTest, BinaryByHand) {
  // truth: 1 1 1 0 0 0 0 ; predicted: 1 1 0 1 0 0 0 -> tp 2, fp 1, fn 1, tn 3
  std::vector<std::vector<int64_t>> confusion;
  const auto m = classification_metrics(logits_for({1, 1, 0, 1, 0, 0, 0}, 2),
                                        labels_of({1, 1, 1, 0, 0, 0, 0}), &confusion);
  EXPECT_DOUBLE_EQ(m.at("accuracy"), 5.0 / 7);
  EXPECT_DOUBLE_EQ(m.at("precision"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.at("recall"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.at("f1"), 2.0 / 3);
  // class 0: precision 3/4, recall 3/4
  EXPECT_DOUBLE_EQ(m.at("precision_macro"), (2.0 / 3 + 3.0 / 4) / 2);
  EXPECT_DOUBLE_EQ(m.at("f1_macro"), (2.0 / 3 + 3.0 / 4) / 2);
  EXPECT_EQ(confusion, (std::vector<std::vector<int64_t>>{{3, 1}, {1, 2}}));
}

TEST(MetricsTest, ZeroDivisionIsZeroAndIgnoredRowsDropOut) {
  // Nothing predicted positive: precision of class 1 is 0/0 -> 0, as sklearn's zero_division default.
  const auto m = classification_metrics(logits_for({0, 0, 0, 1}, 2), labels_of({1, 0, 0, -100}));
  EXPECT_DOUBLE_EQ(m.at("accuracy"), 2.0 / 3);  // the -100 row (predicted 1) does not count
  EXPECT_EQ(m.at("precision"), 0.0);
  EXPECT_EQ(m.at("recall"), 0.0);
  EXPECT_EQ(m.at("f1"), 0.0);
  // Multi-class "f1" is the macro average.
  const auto three = classification_metrics(logits_for({0, 1, 2, 2}, 3), labels_of({0, 1, 1, 2}));
  EXPECT_DOUBLE_EQ(three.at("f1"), three.at("f1_macro"));
  EXPECT_DOUBLE_EQ(three.at("f1"), (1.0 + 2.0 / 3 + 2.0 / 3) / 3);
  // Every row ignored: zero, not NaN.
  EXPECT_EQ(classification_metrics(logits_for({1}, 2), labels_of({-100})).at("accuracy"), 0.0);
}

TEST(MetricsTest, MatchesPyTorchGoldens) {
  std::ifstream in(berth::testing::golden_dir() + "/metrics_goldens.json");
  ASSERT_TRUE(in) << "missing goldens: build berth_goldens";
  const auto goldens = nlohmann::json::parse(in);
  ASSERT_EQ(goldens["classification"].size(), 5u);
  for (const auto& c : goldens["classification"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::vector<float> flat;
    for (const auto& row : c["logits"])
      for (const auto& v : row) flat.push_back(v.get<float>());
    const int64_t n = static_cast<int64_t>(c["logits"].size());
    const at::Tensor logits = torch::tensor(flat).reshape({n, -1});
    const at::Tensor labels = labels_of(c["labels"].get<std::vector<int64_t>>());
    std::vector<std::vector<int64_t>> confusion;
    const auto m = classification_metrics(logits, labels, &confusion);
    ASSERT_EQ(m.size(), c["metrics"].size());
    for (const auto& [name, expected] : c["metrics"].items())
      EXPECT_NEAR(m.at(name), expected.get<double>(), 1e-12) << name;
    EXPECT_EQ(confusion, c["confusion"].get<std::vector<std::vector<int64_t>>>());
  }
  const auto& r = goldens["regression"];
  const auto m = regression_metrics(torch::tensor(r["predictions"].get<std::vector<float>>()),
                                    torch::tensor(r["labels"].get<std::vector<float>>()).unsqueeze(1));
  for (const auto& [name, expected] : r["metrics"].items())
    EXPECT_NEAR(m.at(name), expected.get<double>(), 1e-12) << name;
}

TEST(MetricsTest, RegressionByHand) {
  const auto m = regression_metrics(torch::tensor({1.0, 2.0, 4.0}), torch::tensor({1.0, 3.0, 2.0}));
  EXPECT_DOUBLE_EQ(m.at("mse"), 5.0 / 3);
  EXPECT_DOUBLE_EQ(m.at("mae"), 1.0);
  EXPECT_DOUBLE_EQ(m.at("rmse"), std::sqrt(5.0 / 3));
}

TEST(MetricsTest, ShapeAndLabelErrors) {
  expect_contains(error_text([] {
                    classification_metrics(torch::zeros({4}), labels_of({0, 1, 0, 1}));
                  }),
                  {"logits of shape (N, C)", "[4]"});
  expect_contains(error_text([] {
                    classification_metrics(torch::zeros({4, 2}), labels_of({0, 1}));
                  }),
                  {"labels of shape (N,) = (4,)", "[2]"});
  expect_contains(error_text([] {
                    classification_metrics(torch::zeros({2, 2}), labels_of({0, 2}));
                  }),
                  {"label 2 at row 1", "outside [0, 2)", "-100"});
  expect_contains(error_text([] {
                    classification_metrics(torch::zeros({2, 1}), labels_of({0, 0}));
                  }),
                  {"at least 2 classes", "regression_metrics"});
  expect_contains(error_text([] {
                    classification_metrics(torch::zeros({2, 2}), torch::zeros({2}));
                  }),
                  {"integer class labels"});
  expect_contains(error_text([] { regression_metrics(torch::zeros({3}), torch::zeros({2})); }),
                  {"same N", "[3]", "[2]"});
}

}  // namespace
}  // namespace berth::train
