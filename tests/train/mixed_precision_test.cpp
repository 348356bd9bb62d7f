// Mixed precision: fp16/bf16 selection and its refusals, the autocast guard, a tiny BERT trained in bf16 on
// the CPU with float32 master weights.
#include "berth/train/mixed_precision.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "berth/core/compat.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/bert_presets.h"
#include "berth/optim/adamw.h"
#include "berth/optim/param_groups.h"
#include "berth/train/loss_scaler.h"
#include "support/test_support.h"

using berth::testing::error_text;
using berth::testing::expect_contains;

namespace berth::train {
namespace {

constexpr auto kCpu = c10::DeviceType::CPU;

TEST(MixedPrecision, ParsesAndNamesPrecisions) {
  for (const Precision p : {Precision::fp32, Precision::fp16, Precision::bf16})
    EXPECT_EQ(parse_precision(to_string(p)), p);
  EXPECT_EQ(to_string(Precision::bf16), "bf16");
  EXPECT_EQ(parse_precision("no"), Precision::fp32);
  EXPECT_EQ(compute_dtype(Precision::fp16), torch::kHalf);
  EXPECT_EQ(compute_dtype(Precision::bf16), torch::kBFloat16);
  expect_contains(error_text([] { parse_precision("fp8"); }),
                  {"unknown precision \"fp8\"", "fp32, fp16 or bf16"});
}

TEST(MixedPrecision, Fp16OnTheCpuIsRefusedAsHfDoes) {
  const std::string text = error_text([] { resolve_precision(true, false, c10::Device("cpu")); });
  expect_contains(text, {"fp16 mixed precision requires a GPU", "this run's device is cpu", "--bf16",
                         "drop --fp16 to train in fp32", "\"fp16\": {\"enabled\": false}",
                         "\"bf16\": {\"enabled\": true}"});
  expect_contains(error_text([] { AutocastGuard guard(Precision::fp16, kCpu); }),
                  {"fp16 mixed precision requires a GPU", "--bf16"});
  expect_contains(error_text([] { resolve_precision(true, true, c10::Device("cpu")); }),
                  {"--fp16 and --bf16 are both set", "keep one of them"});
}

TEST(MixedPrecision, ResolvesBf16AndFp32OnTheCpu) {
  EXPECT_TRUE(autocast_available(kCpu, torch::kBFloat16));
  const PrecisionOptions bf16 = resolve_precision(false, true, c10::Device("cpu"));
  EXPECT_EQ(bf16.precision, Precision::bf16);
  EXPECT_EQ(bf16.loss_scale.loss_scale, 0);  // untouched defaults: bf16 does no loss scaling
  EXPECT_EQ(resolve_precision(false, false, c10::Device("cpu")).precision, Precision::fp32);
  expect_contains(error_text([] { AutocastGuard guard(Precision::bf16, c10::DeviceType::MPS); }),
                  {"bf16 autocast runs on cpu or cuda", "MPS"});
}

TEST(MixedPrecision, AutocastGuardRestoresTheState) {
  ASSERT_FALSE(compat::autocast_enabled(kCpu));
  EXPECT_TRUE(autocast_available(kCpu, torch::kBFloat16));  // torch 2.x's CPU autocast takes bf16
  const at::Tensor a = torch::randn({4, 8}), w = torch::randn({8, 3});
  {
    AutocastGuard fp32(Precision::fp32, kCpu);
    EXPECT_FALSE(fp32.active());
    EXPECT_FALSE(compat::autocast_enabled(kCpu));
    EXPECT_EQ(torch::matmul(a, w).scalar_type(), torch::kFloat);
  }
  {
    AutocastGuard outer(Precision::bf16, kCpu);
    EXPECT_TRUE(outer.active());
    EXPECT_TRUE(compat::autocast_enabled(kCpu));
    EXPECT_EQ(compat::autocast_dtype(kCpu), torch::kBFloat16);
    EXPECT_EQ(torch::matmul(a, w).scalar_type(), torch::kBFloat16);
    {
      AutocastGuard inner(Precision::bf16, kCpu);
      EXPECT_TRUE(compat::autocast_enabled(kCpu));
    }
    EXPECT_TRUE(compat::autocast_enabled(kCpu));  // the inner exit leaves the outer region on
    EXPECT_EQ(torch::matmul(a, w).scalar_type(), torch::kBFloat16);
  }
  EXPECT_FALSE(compat::autocast_enabled(kCpu));
  EXPECT_EQ(torch::matmul(a, w).scalar_type(), torch::kFloat);
  // A region opened by someone else (without the guard) stays open after the guard's exit.
  compat::set_autocast_enabled(kCpu, true);
  { AutocastGuard guard(Precision::bf16, kCpu); }
  EXPECT_TRUE(compat::autocast_enabled(kCpu));
  EXPECT_EQ(torch::matmul(a, w).scalar_type(), torch::kBFloat16);
  compat::set_autocast_enabled(kCpu, false);
  expect_contains(error_text([] { compat::autocast_enabled(c10::DeviceType::MPS); }),
                  {"autocast in berth runs on cpu or cuda", "MPS"});
}

struct TinyBatch {
  at::Tensor ids, mask, labels;
};

TinyBatch tiny_batch() {
  torch::manual_seed(11);
  TinyBatch batch;
  batch.ids = torch::randint(1, 100, {4, 16}, torch::kLong);
  batch.mask = torch::ones({4, 16}, torch::kLong);
  batch.mask.index_put_({0, torch::indexing::Slice(12)}, 0);  // one padded row: the mask path is used
  batch.labels = torch::tensor({0, 1, 1, 0}, torch::kLong);
  return batch;
}

double eval_loss(BertForSequenceClassification& model, const TinyBatch& batch, Precision precision) {
  torch::NoGradGuard no_grad;
  model->eval();
  AutocastGuard guard(precision, kCpu);
  return model->forward(batch.ids, batch.mask, {}, batch.labels).loss.item<double>();
}

// bert-tiny's shape (2 layers, hidden 128) with a 100-token vocabulary, trained in bf16 as the Trainer will:
// forward and loss inside the guard, backward and the AdamW step outside, parameters float32 throughout.
TEST(MixedPrecision, TinyBertTrainsInBf16OnTheCpu) {
  torch::manual_seed(5);
  BertForSequenceClassification model(bert_preset("bert-tiny", 100));
  const TinyBatch batch = tiny_batch();
  const double fp32_loss = eval_loss(model, batch, Precision::fp32);
  const double bf16_loss = eval_loss(model, batch, Precision::bf16);
  ASSERT_TRUE(std::isfinite(bf16_loss));
  EXPECT_NE(bf16_loss, fp32_loss);          // it really computed in bf16
  EXPECT_NEAR(bf16_loss, fp32_loss, 5e-3);  // measured: 0.682938 vs 0.682913
  RecordProperty("fp32_loss", std::to_string(fp32_loss));
  RecordProperty("bf16_loss", std::to_string(bf16_loss));

  {  // a linear inside the model computes in bf16 under the guard, from its float32 weights
    torch::NoGradGuard no_grad;
    AutocastGuard guard(Precision::bf16, kCpu);
    const at::Tensor hidden = model->bert->embeddings->forward(batch.ids, torch::zeros_like(batch.ids));
    auto& query = model->bert->encoder->layer->ptr<BertLayerImpl>(0)->attention->self->query;
    EXPECT_EQ(hidden.scalar_type(), torch::kFloat);  // embeddings and LayerNorm stay float32
    EXPECT_EQ(query(hidden).scalar_type(), torch::kBFloat16);
    EXPECT_EQ(query->weight.scalar_type(), torch::kFloat);
  }

  model->train();  // dropout on: the fused kernels see bf16 inputs and must step aside
  optim::AdamW adam(optim::hf_param_groups(*model, 0.01), optim::AdamWOptions{2e-3});
  for (int step = 0; step < 8; ++step) {
    at::Tensor loss;
    {
      AutocastGuard guard(Precision::bf16, kCpu);
      loss = model->forward(batch.ids, batch.mask, {}, batch.labels).loss;
    }
    EXPECT_FALSE(compat::autocast_enabled(kCpu));
    ASSERT_TRUE(std::isfinite(loss.item<double>())) << "step " << step;
    loss.backward();
    int with_grad = 0;
    for (const auto& p : model->parameters()) {
      EXPECT_EQ(p.scalar_type(), torch::kFloat);  // the master weights
      if (!p.grad().defined()) continue;
      ++with_grad;
      EXPECT_EQ(p.grad().scalar_type(), torch::kFloat);
    }
    EXPECT_GT(with_grad, 30);
    std::vector<at::Tensor> grads;
    for (const auto& p : model->parameters()) grads.push_back(p.grad());
    EXPECT_FALSE(has_inf_or_nan(grads)) << "step " << step;
    adam.step();
    adam.zero_grad_to_none();
  }
  const double trained = eval_loss(model, batch, Precision::bf16);
  RecordProperty("bf16_loss_after_8_steps", std::to_string(trained));
  EXPECT_LT(trained, bf16_loss - 0.1) << "bf16 loss before " << bf16_loss << ", after 8 steps " << trained;
  EXPECT_LT(eval_loss(model, batch, Precision::fp32), fp32_loss - 0.1);
}

// fp16 on CUDA: autocast to half, float32 parameters, the loss scaler's options kept. Needs a GPU.
TEST(MixedPrecision, Fp16AutocastsOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  LossScaleOptions scaling;
  scaling.initial_scale_power = 12;
  const PrecisionOptions fp16 = resolve_precision(true, false, c10::Device("cuda:0"), scaling);
  EXPECT_EQ(fp16.precision, Precision::fp16);
  EXPECT_EQ(fp16.loss_scale.initial_scale_power, 12);
  torch::nn::Linear linear(8, 4);
  linear->to(torch::kCUDA);
  const at::Tensor x = torch::randn({2, 8}, torch::kCUDA);
  {
    AutocastGuard guard(Precision::fp16, c10::DeviceType::CUDA);
    EXPECT_EQ(linear(x).scalar_type(), torch::kHalf);
    EXPECT_EQ(linear->weight.scalar_type(), torch::kFloat);
  }
  EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CUDA));
  EXPECT_EQ(linear(x).scalar_type(), torch::kFloat);
}

}  // namespace
}  // namespace berth::train
