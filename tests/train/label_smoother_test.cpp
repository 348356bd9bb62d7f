// Tests for label_smoothing_factor's loss: berth's label_smoothed_loss equals HF's LabelSmoother on the same
// logits and labels (goldens from tests/goldens/label_smoother_goldens.py: classification, token
// classification, masked LM with many -100s, causal LM shifted), and which models HF smooths.
#include "berth/train/label_smoother.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/model/problem_type.h"
#include "support/test_support.h"

namespace berth::train {
namespace {

at::Tensor label_smoother_golden_tensor(const nlohmann::json& j, c10::ScalarType dtype) {
  const std::vector<double> values = j.at("values").get<std::vector<double>>();
  return torch::tensor(values, torch::kFloat64).reshape(j.at("shape").get<std::vector<int64_t>>()).to(dtype);
}

TEST(LabelSmoother, EqualsHfsLabelSmoother) {
  std::ifstream in(berth::testing::golden_dir() + "/train/label_smoother.json");
  ASSERT_TRUE(in.good()) << "missing golden train/label_smoother.json: build the berth_goldens target";
  const nlohmann::json golden = nlohmann::json::parse(in);
  ASSERT_EQ(golden.size(), 6u);
  for (const auto& c : golden) {
    const at::Tensor logits = label_smoother_golden_tensor(c.at("logits"), at::kFloat);
    const at::Tensor labels = label_smoother_golden_tensor(c.at("labels"), at::kLong);
    const at::Tensor loss =
        label_smoothed_loss(logits, labels, c.at("epsilon").get<double>(), c.at("shift_labels").get<bool>());
    EXPECT_EQ(loss.dim(), 0);
    EXPECT_EQ(loss.scalar_type(), at::kFloat);
    const double expected = c.at("loss").get<double>();
    // float32 sums in another order than torch's Python build may take: a few ulps of the loss.
    EXPECT_NEAR(loss.item<double>(), expected, 2e-6 * std::abs(expected)) << c.at("name");
  }
}

TEST(LabelSmoother, EpsilonZeroIsCrossEntropyAndShiftMatters) {
  torch::manual_seed(3);
  const at::Tensor logits = torch::randn({2, 5, 7});
  at::Tensor labels = torch::randint(0, 7, {2, 5}, torch::kLong);
  labels.index_put_({0, 2}, -100);
  const at::Tensor ce = torch::nn::functional::cross_entropy(
      logits.reshape({-1, 7}), labels.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
  EXPECT_NEAR(label_smoothed_loss(logits, labels, 0.0, false).item<double>(), ce.item<double>(), 1e-6);
  EXPECT_NE(label_smoothed_loss(logits, labels, 0.0, true).item<double>(), ce.item<double>());
  EXPECT_GT(label_smoothed_loss(logits, labels, 0.5, false).item<double>(), 0.0);
}

TEST(LabelSmoother, WhichModelsHfSmooths) {
  TaskModelInfo info;
  info.architecture = "BertForSequenceClassification";
  info.problem_type = kSingleLabelClassification;
  EXPECT_EQ(label_smoothing_for(info), LabelSmoothing::Applies);
  info.problem_type = kMultiLabelClassification;
  EXPECT_EQ(label_smoothing_for(info), LabelSmoothing::Disabled);
  info.problem_type = kRegression;
  berth::testing::expect_contains(
      berth::testing::error_text([&] { label_smoothing_for(info); }),
      {"BertForSequenceClassification is a regression model", "Fix: leave --label_smoothing_factor at 0"});
  for (ModelTask task : {ModelTask::TokenClassification, ModelTask::MaskedLM, ModelTask::CausalLM}) {
    info.task = task;
    EXPECT_EQ(label_smoothing_for(info), LabelSmoothing::Applies);
  }
  info.task = ModelTask::QuestionAnswering;
  EXPECT_EQ(label_smoothing_for(info), LabelSmoothing::NotPredicted);
}

}  // namespace
}  // namespace berth::train
