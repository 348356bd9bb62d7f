// Tests for the fused attention: output and gradients against HF's eager chain (scores, additive padding
// mask, softmax, values) within 1e-5 in float32, and within bf16's rounding under CPU autocast.
#include "berth/kernels/scaled_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "berth/train/mixed_precision.h"

namespace {

using berth::kernels::scaled_attention;

struct AttentionInputs {
  at::Tensor q, k, v, mask;
};

// Two sequences, the second padded after 5 of its 9 keys; HF's (B, 1, 1, S) additive mask with finfo.min.
AttentionInputs padded_inputs(int64_t heads, int64_t head_size) {
  torch::manual_seed(3);
  AttentionInputs in;
  in.q = torch::randn({2, heads, 9, head_size}).requires_grad_(true);
  in.k = torch::randn({2, heads, 9, head_size}).requires_grad_(true);
  in.v = torch::randn({2, heads, 9, head_size}).requires_grad_(true);
  at::Tensor keep = torch::ones({2, 9});
  keep[1].slice(0, 5).zero_();
  in.mask = ((1.0 - keep) * std::numeric_limits<float>::lowest()).unsqueeze(1).unsqueeze(2);
  return in;
}

// HF's eager attention, as BertSelfAttention writes it.
at::Tensor eager_attention(const AttentionInputs& in, double divisor) {
  return torch::softmax(torch::matmul(in.q, in.k.transpose(-1, -2)) / divisor + in.mask, -1).matmul(in.v);
}

TEST(ScaledAttention, MatchesEagerAttentionAndItsGradientsInFloat32) {
  for (const int64_t head_size : {8, 64}) {
    const AttentionInputs in = padded_inputs(3, head_size);
    const double divisor = std::sqrt(static_cast<double>(head_size));
    const at::Tensor upstream = torch::randn({2, 3, 9, head_size});
    const at::Tensor fused = scaled_attention(in.q, in.k, in.v, in.mask, 1.0 / divisor);
    const auto fused_grads = torch::autograd::grad({fused}, {in.q, in.k, in.v}, {upstream});
    const at::Tensor eager = eager_attention(in, divisor);
    const auto eager_grads = torch::autograd::grad({eager}, {in.q, in.k, in.v}, {upstream});
    EXPECT_LT((fused - eager).abs().max().item<double>(), 1e-5) << "head size " << head_size;
    for (size_t i = 0; i < 3; ++i)
      EXPECT_LT((fused_grads[i] - eager_grads[i]).abs().max().item<double>(), 1e-5) << "q, k, v"[3 * i];
    // The padded keys get no weight: their values do not reach the output.
    EXPECT_EQ(eager_grads[2][1].slice(1, 5).abs().max().item<double>(), 0.0);
    EXPECT_LT(fused_grads[2][1].slice(1, 5).abs().max().item<double>(), 1e-30);
  }
}

// Left padding under a causal mask leaves the pad queries no key: their rows' gradients must still be
// eager's.
TEST(ScaledAttention, FullyMaskedRowsKeepEagerGradients) {
  AttentionInputs in = padded_inputs(2, 8);
  const float lowest = std::numeric_limits<float>::lowest();
  at::Tensor causal = torch::triu(torch::full({9, 9}, lowest), 1);
  at::Tensor mask = causal.expand({2, 1, 9, 9}).clone();
  mask[1].slice(2, 0, 3).fill_(lowest);  // the second row's first 3 positions are left padding
  in.mask = mask;
  const at::Tensor upstream = torch::randn({2, 2, 9, 8});
  const at::Tensor fused = scaled_attention(in.q, in.k, in.v, in.mask, 0.5);
  const auto fused_grads = torch::autograd::grad({fused}, {in.q, in.k, in.v}, {upstream});
  const at::Tensor eager = eager_attention(in, 2.0);
  const auto eager_grads = torch::autograd::grad({eager}, {in.q, in.k, in.v}, {upstream});
  EXPECT_LT((fused - eager).abs().max().item<double>(), 1e-5);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_LT((fused_grads[i] - eager_grads[i]).abs().max().item<double>(), 1e-5);
  torch::NoGradGuard no_grad;  // the same path without autograd: a checkpoint's recompute replays the forward
  EXPECT_TRUE(torch::equal(scaled_attention(in.q, in.k, in.v, in.mask, 0.5), fused));
}

// A causal mask with right padding leaves every query a key: it takes the fused kernel, exactly torch's
// scaled_dot_product_attention, within 1e-5 of eager for outputs and gradients.
TEST(ScaledAttention, CausalMaskWithRightPaddingTakesTheFusedKernel) {
  AttentionInputs in = padded_inputs(2, 8);
  const float lowest = std::numeric_limits<float>::lowest();
  at::Tensor causal = torch::triu(torch::full({9, 9}, lowest), 1);
  in.mask = (causal.unsqueeze(0) + in.mask.squeeze(1)).clamp_min(lowest).unsqueeze(1);  // (2, 1, 9, 9)
  const at::Tensor upstream = torch::randn({2, 2, 9, 8});
  const at::Tensor fused = scaled_attention(in.q, in.k, in.v, in.mask, 0.5);
  EXPECT_TRUE(
      torch::equal(fused, torch::scaled_dot_product_attention(in.q, in.k, in.v, in.mask, 0.0, false, 0.5)));
  const auto fused_grads = torch::autograd::grad({fused}, {in.q, in.k, in.v}, {upstream});
  const at::Tensor eager = eager_attention(in, 2.0);
  const auto eager_grads = torch::autograd::grad({eager}, {in.q, in.k, in.v}, {upstream});
  EXPECT_LT((fused - eager).abs().max().item<double>(), 1e-5);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_LT((fused_grads[i] - eager_grads[i]).abs().max().item<double>(), 1e-5) << "q, k, v"[3 * i];
}

TEST(ScaledAttention, RunsInBf16UnderAutocastWithTheFloat32Mask) {
  const AttentionInputs in = padded_inputs(2, 16);
  const at::Tensor eager = eager_attention(in, 4.0);
  at::Tensor fused;
  {
    berth::train::AutocastGuard guard(berth::train::Precision::bf16, c10::DeviceType::CPU);
    fused = scaled_attention(in.q.to(at::kBFloat16), in.k.to(at::kBFloat16), in.v.to(at::kBFloat16), in.mask,
                             0.25);
  }
  EXPECT_EQ(fused.scalar_type(), at::kBFloat16);
  // bf16 keeps 8 significant bits: about 0.4% of the largest value per rounding.
  EXPECT_LT((fused.to(at::kFloat) - eager).abs().max().item<double>(), 3e-2);
}

// On a GPU (tests/gpu/run.sh): the fused kernel (flash or memory-efficient) against eager in float32, with a
// key-padding mask and with a causal mask over right padding.
TEST(ScaledAttention, MatchesEagerOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  AttentionInputs in = padded_inputs(2, 64);
  const float lowest = std::numeric_limits<float>::lowest();
  const at::Tensor causal =
      (torch::triu(torch::full({9, 9}, lowest), 1).unsqueeze(0) + in.mask.squeeze(1)).clamp_min(lowest);
  for (const at::Tensor& mask : {in.mask, causal.unsqueeze(1)}) {
    AttentionInputs on_gpu{in.q.detach().cuda(), in.k.detach().cuda(), in.v.detach().cuda(), mask.cuda()};
    const at::Tensor fused = scaled_attention(on_gpu.q, on_gpu.k, on_gpu.v, on_gpu.mask, 0.125);
    EXPECT_LT((fused - eager_attention(on_gpu, 8.0)).abs().max().item<double>(), 1e-5);
  }
}

TEST(ScaledAttention, AnUndefinedMaskAttendsToEveryKey) {
  const AttentionInputs in = padded_inputs(2, 8);
  AttentionInputs unmasked = in;
  unmasked.mask = torch::zeros({1, 1, 1, 9});
  const at::Tensor fused = scaled_attention(in.q, in.k, in.v, at::Tensor(), 0.5);
  EXPECT_LT((fused - eager_attention(unmasked, 2.0)).abs().max().item<double>(), 1e-5);
}

}  // namespace
