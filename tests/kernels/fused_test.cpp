// Tests for the fused kernels inside BertForSequenceClassification's training step: without dropout the
// fused path equals the plain torch ops (loss and every gradient); with dropout it is reproducible under
// torch::manual_seed; the switch and eval mode leave the plain ops in charge.
#include "berth/kernels/fused.h"

#include "berth/model/bert_for_sequence_classification.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

berth::BertConfig small_config(double dropout) {
  berth::BertConfig c;
  c.vocab_size = 50;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 37;
  c.max_position_embeddings = 24;
  c.hidden_dropout_prob = dropout;
  c.attention_probs_dropout_prob = dropout;
  c.set_labels({"a", "b", "c"});
  return c;
}

struct StepResult {
  at::Tensor loss;
  std::vector<std::pair<std::string, at::Tensor>> grads;
};

// One training-mode forward + backward on a fixed batch with one padded sequence.
StepResult train_step(berth::BertForSequenceClassification& model, bool fused, uint64_t seed) {
  berth::kernels::set_fused_enabled(fused);
  torch::manual_seed(100);
  at::Tensor ids = torch::randint(50, {3, 19}, torch::kLong);
  at::Tensor mask = torch::ones({3, 19}, torch::kLong);
  mask[2].slice(0, 12).zero_();
  at::Tensor labels = torch::tensor({0, 2, 1}, torch::kLong);
  model->train();
  model->zero_grad();
  torch::manual_seed(seed);
  at::Tensor loss = model->forward(ids, mask, {}, labels).loss;
  loss.backward();
  berth::kernels::set_fused_enabled(true);
  StepResult result{loss.detach(), {}};
  for (const auto& item : model->named_parameters())
    result.grads.emplace_back(item.key(), item.value().grad().clone());
  return result;
}

TEST(FusedKernels, TrainingWithoutDropoutEqualsThePlainOps) {
  berth::BertForSequenceClassification model(small_config(0.0), berth::BertInitOptions{true, 3});
  StepResult fused = train_step(model, true, 1);
  StepResult plain = train_step(model, false, 1);
  EXPECT_NEAR(fused.loss.item<double>(), plain.loss.item<double>(), 1e-5);
  ASSERT_EQ(fused.grads.size(), plain.grads.size());
  for (size_t i = 0; i < fused.grads.size(); ++i) {
    const at::Tensor& a = fused.grads[i].second;
    const at::Tensor& b = plain.grads[i].second;
    EXPECT_TRUE(torch::allclose(a, b, 1e-3, 1e-6))
        << fused.grads[i].first << " max diff " << (a - b).abs().max().item<double>();
  }
}

TEST(FusedKernels, DropoutIsReproducibleUnderTheSameSeed) {
  berth::BertForSequenceClassification model(small_config(0.1), berth::BertInitOptions{true, 3});
  StepResult a = train_step(model, true, 7);
  StepResult b = train_step(model, true, 7);
  StepResult c = train_step(model, true, 8);
  EXPECT_TRUE(a.loss.equal(b.loss));
  for (size_t i = 0; i < a.grads.size(); ++i) EXPECT_TRUE(a.grads[i].second.equal(b.grads[i].second));
  EXPECT_FALSE(a.loss.equal(c.loss));
  // Dropout is on: the loss differs from the deterministic eval-mode forward's.
  model->eval();
  torch::NoGradGuard no_grad;
  torch::manual_seed(100);
  at::Tensor ids = torch::randint(50, {3, 19}, torch::kLong);
  at::Tensor mask = torch::ones({3, 19}, torch::kLong);
  mask[2].slice(0, 12).zero_();
  at::Tensor eval_loss = model->forward(ids, mask, {}, torch::tensor({0, 2, 1}, torch::kLong)).loss;
  EXPECT_GT(std::abs(eval_loss.item<double>() - a.loss.item<double>()), 1e-6);
}

TEST(FusedKernels, OnlyCpuFloatTensorsAndTheSwitch) {
  EXPECT_TRUE(berth::kernels::use_fused(torch::ones({2})));
  EXPECT_FALSE(berth::kernels::use_fused(torch::ones({2}, at::kDouble)));
  EXPECT_FALSE(berth::kernels::use_fused(at::Tensor()));
  berth::kernels::set_fused_enabled(false);
  EXPECT_FALSE(berth::kernels::use_fused(torch::ones({2})));
  berth::kernels::set_fused_enabled(true);
}

}  // namespace
