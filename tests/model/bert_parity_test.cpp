// Parity with HF transformers' BertForSequenceClassification and BertModel (tests/goldens/bert_goldens.py),
// in eager attention and in SDPA: logits, hidden states, loss and every parameter's gradient, per golden
// case.
#include "berth/io/safetensors.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/pretrained.h"

#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <set>

namespace {

// The cases bert_goldens.py writes (its CASES in eager attention, then each again under SDPA as <case>_sdpa);
// a case the script stops writing fails here.
const std::vector<std::string> kCases = {"gelu_single_label",
                                         "gelu_new_regression",
                                         "relu_multi_label",
                                         "gelu_pytorch_tanh_explicit_single",
                                         "gelu_regression_two_outputs",
                                         "gelu_no_labels",
                                         "gelu_single_label_sdpa",
                                         "gelu_new_regression_sdpa",
                                         "relu_multi_label_sdpa",
                                         "gelu_pytorch_tanh_explicit_single_sdpa",
                                         "gelu_regression_two_outputs_sdpa",
                                         "gelu_no_labels_sdpa"};

// fp32 parity: |actual - expected| <= tol + tol * |expected| everywhere (numpy's allclose). Outputs within
// 1e-5; gradients, sums over every position of the batch whose order differs between CPUs, within 1e-4.
void expect_close(const at::Tensor& actual, const at::Tensor& expected, const std::string& what,
                  double tol = 1e-5) {
  ASSERT_TRUE(actual.defined()) << what << " is undefined";
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const at::Tensor a = actual.detach().to(at::kDouble);
  const at::Tensor e = expected.to(at::kDouble);
  const double worst = ((a - e).abs() - tol * e.abs()).max().item<double>();
  EXPECT_LE(worst, tol) << what << ": max |diff| " << (a - e).abs().max().item<double>();
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
  const bool sdpa = GetParam().size() > 5 && GetParam().compare(GetParam().size() - 5, 5, "_sdpa") == 0;
  EXPECT_EQ(golden.metadata().at("attn_implementation"), sdpa ? "sdpa" : "eager");

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
    expect_close(param.value().grad(), golden.tensor("grad." + param.key()), "grad of " + param.key(), 1e-4);
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(model->named_parameters().size()));
  EXPECT_GT(checked, 20);
}

INSTANTIATE_TEST_SUITE_P(Goldens, BertGoldenCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(BertParity, ProblemTypeIsChosenAsHfChoosesAndRecorded) {
  // The golden cases leave problem_type unset except the explicit ones; after a forward with labels the
  // config records what was chosen, as HF's does (the golden's metadata holds what HF's forward chose, and
  // save_pretrained then writes it).
  std::set<std::string> chosen;
  for (const std::string& name : kCases) {
    const auto golden = berth::io::SafetensorsFile::open(case_dir(name) + "/golden.safetensors");
    const std::string expected = golden.metadata().at("problem_type");
    if (!golden.contains("labels")) {
      EXPECT_EQ(expected, "") << name;
      continue;
    }
    auto model = berth::from_pretrained<berth::BertForSequenceClassification>(case_dir(name)).model;
    model->eval();
    model->forward(golden.tensor("input_ids"), {}, {}, golden.tensor("labels"));
    ASSERT_TRUE(model->config.problem_type.has_value()) << name;
    EXPECT_EQ(*model->config.problem_type, expected) << name;
    chosen.insert(expected);
  }
  // Every kind of loss is covered.
  EXPECT_EQ(chosen, (std::set<std::string>{"multi_label_classification", "regression",
                                           "single_label_classification"}));
}

}  // namespace
