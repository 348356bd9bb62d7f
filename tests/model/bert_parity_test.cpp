// Parity with the PyTorch reference of HF's BertForSequenceClassification (tests/goldens/bert_goldens.py):
// logits, hidden states, loss and every parameter's gradient, per golden case.
#include "berth/io/safetensors.h"
#include "berth/model/bert_model.h"
#include "berth/model/pretrained.h"

#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

namespace {

// The cases bert_goldens.py writes (its CASES); a case the script stops writing fails here.
const std::vector<std::string> kCases = {"gelu_single_label",
                                         "gelu_new_regression",
                                         "relu_multi_label",
                                         "gelu_pytorch_tanh_explicit_single",
                                         "gelu_regression_two_outputs",
                                         "gelu_no_labels"};

// fp32 parity: |actual - expected| <= 1e-5 + 1e-5 * |expected| everywhere (numpy's allclose).
void expect_close(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what << " is undefined";
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const at::Tensor a = actual.detach().to(at::kDouble);
  const at::Tensor e = expected.to(at::kDouble);
  const double worst = ((a - e).abs() - 1e-5 * e.abs()).max().item<double>();
  EXPECT_LE(worst, 1e-5) << what << ": max |diff| " << (a - e).abs().max().item<double>();
}

std::string case_dir(const std::string& name) { return berth::testing::golden_dir() + "/bert/" + name; }

TEST(BertParity, ScriptWritesTheListedCases) {
  std::ifstream in(berth::testing::golden_dir() + "/bert/cases.txt");
  std::vector<std::string> written;
  for (std::string line; std::getline(in, line) && written.size() < 100;) written.push_back(line);
  EXPECT_EQ(written, kCases);
}

class BertGoldenCase : public ::testing::TestWithParam<std::string> {};

TEST_P(BertGoldenCase, LogitsLossAndGradientsMatchTheReference) {
  const std::string dir = case_dir(GetParam());
  auto loaded = berth::from_pretrained<berth::BertForSequenceClassification>(dir);
  EXPECT_TRUE(loaded.report.clean()) << (loaded.report.warnings.empty() ? "" : loaded.report.warnings[0]);
  berth::BertForSequenceClassification model = loaded.model;
  model->eval();  // dropout off, as the reference ran

  const auto golden = berth::io::SafetensorsFile::open(dir + "/golden.safetensors");
  auto optional = [&](const char* name) {
    return golden.contains(name) ? golden.tensor(name) : at::Tensor();
  };
  const at::Tensor ids = golden.tensor("input_ids");
  const at::Tensor mask = optional("attention_mask");
  const at::Tensor types = optional("token_type_ids");
  const at::Tensor labels = optional("labels");
  EXPECT_EQ(golden.metadata().at("attention_mask"), mask.defined() ? "true" : "false");

  {
    torch::NoGradGuard no_grad;
    berth::BertModelOutput base = model->bert(ids, mask, types);
    expect_close(base.last_hidden_state, golden.tensor("last_hidden_state"), "last_hidden_state");
    expect_close(base.pooler_output, golden.tensor("pooler_output"), "pooler_output");
  }

  berth::SequenceClassifierOutput out = model(ids, mask, types, labels);
  expect_close(out.logits, golden.tensor("logits"), "logits");
  if (!labels.defined()) {
    EXPECT_FALSE(out.loss.defined());
    return;
  }
  expect_close(out.loss, golden.tensor("loss"), "loss");
  out.loss.backward();
  int checked = 0;
  for (const auto& param : model->named_parameters()) {
    expect_close(param.value().grad(), golden.tensor("grad." + param.key()), "grad of " + param.key());
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(model->named_parameters().size()));
  EXPECT_GT(checked, 20);
}

INSTANTIATE_TEST_SUITE_P(Goldens, BertGoldenCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(BertParity, ProblemTypeIsChosenAsHfChoosesAndRecorded) {
  // The golden cases leave problem_type unset except the explicit ones; after a forward with labels the
  // config records what was chosen, as HF's does (and save_pretrained then writes it).
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"gelu_single_label", "single_label_classification"},
      {"gelu_new_regression", "regression"},
      {"relu_multi_label", "multi_label_classification"},
      {"gelu_pytorch_tanh_explicit_single", "single_label_classification"},
      {"gelu_regression_two_outputs", "regression"}};
  for (const auto& [name, problem] : expected) {
    auto model = berth::from_pretrained<berth::BertForSequenceClassification>(case_dir(name)).model;
    const auto golden = berth::io::SafetensorsFile::open(case_dir(name) + "/golden.safetensors");
    model->eval();
    model->forward(golden.tensor("input_ids"), {}, {}, golden.tensor("labels"));
    ASSERT_TRUE(model->config.problem_type.has_value()) << name;
    EXPECT_EQ(*model->config.problem_type, problem) << name;
  }
}

}  // namespace
