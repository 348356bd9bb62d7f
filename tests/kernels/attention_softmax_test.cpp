// Tests for the fused attention softmax: forward and gradients against the unfused torch ops in double,
// with and without dropout, masked and fully masked rows, and row lengths off the vector width.
#include "berth/kernels/attention_softmax.h"

#include "berth/kernels/dropout.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace {

using berth::kernels::attention_softmax;

// (B, T) 1/0 -> (B, 1, 1, T) additive, as extended_attention_mask makes it.
at::Tensor additive_mask(const at::Tensor& keep) {
  return ((1.0 - keep.to(at::kFloat)) * std::numeric_limits<float>::lowest()).unsqueeze(1).unsqueeze(2);
}

void check_against_reference(int64_t cols, double p) {
  const int64_t B = 2, H = 3, T = 5;
  torch::manual_seed(42);
  at::Tensor scores = (4 * torch::randn({B, H, T, cols})).requires_grad_(true);
  at::Tensor keep = torch::ones({B, cols});
  keep[1].slice(0, cols - 3).zero_();  // padding at the end of the second sequence
  at::Tensor mask = additive_mask(keep);
  at::Tensor upstream = torch::randn({B, H, T, cols});
  const double divisor = 8.0;

  torch::manual_seed(77);
  at::Tensor out = attention_softmax(scores, mask, divisor, p, true);
  out.backward(upstream);
  // The same seed through berth's dropout gives the mask the fused kernel used (same element order).
  torch::manual_seed(77);
  at::Tensor drop = berth::kernels::dropout(torch::ones({B, H, T, cols}), p, true).to(at::kDouble);

  at::Tensor ref_scores = scores.detach().to(at::kDouble).requires_grad_(true);
  at::Tensor ref = torch::softmax(ref_scores / divisor + mask.to(at::kDouble), -1) * drop;
  ref.backward(upstream.to(at::kDouble));
  EXPECT_TRUE(torch::allclose(out.to(at::kDouble), ref, 1e-5, 1e-6)) << "cols=" << cols << " p=" << p;
  EXPECT_TRUE(torch::allclose(scores.grad().to(at::kDouble), ref_scores.grad(), 1e-4, 1e-6))
      << "cols=" << cols << " p=" << p << " max diff "
      << (scores.grad().to(at::kDouble) - ref_scores.grad()).abs().max().item<double>();
  // Masked keys get exactly zero probability and zero gradient.
  EXPECT_TRUE(out[1].slice(-1, cols - 3).eq(0).all().item<bool>());
}

TEST(AttentionSoftmaxKernel, MatchesUnfusedOpsWithoutDropout) {
  for (int64_t cols : {7, 16, 19, 128}) check_against_reference(cols, 0.0);
}

TEST(AttentionSoftmaxKernel, MatchesUnfusedOpsWithDropout) {
  for (int64_t cols : {7, 19, 128}) check_against_reference(cols, 0.2);
}

TEST(AttentionSoftmaxKernel, FullyMaskedRowIsUniformAsInTorch) {
  at::Tensor scores = torch::randn({1, 2, 3, 9});
  at::Tensor mask = additive_mask(torch::zeros({1, 9}));
  at::Tensor out = attention_softmax(scores, mask, 1.0, 0.0, true);
  at::Tensor ref = torch::softmax(scores + mask, -1);
  EXPECT_TRUE(torch::allclose(out, ref, 1e-5, 1e-7));
}

TEST(AttentionSoftmaxKernel, EvalAndUnsupportedShapesRunThePlainOps) {
  at::Tensor scores = torch::randn({2, 2, 4, 6});
  at::Tensor mask = additive_mask(torch::ones({2, 6}));
  at::Tensor ref = torch::softmax(scores / 2.0 + mask, -1);
  EXPECT_TRUE(attention_softmax(scores, mask, 2.0, 0.5, false).equal(ref));
  // A full (B, H, T, S) mask is not the fused kernel's layout: torch's ops, same result.
  at::Tensor full = mask.expand({2, 2, 4, 6}).contiguous();
  EXPECT_TRUE(torch::allclose(attention_softmax(scores, full, 2.0, 0.0, true), ref, 1e-6, 1e-7));
}

}  // namespace
