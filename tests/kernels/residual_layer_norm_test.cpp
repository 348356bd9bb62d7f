// Tests for the fused bias + dropout + residual + LayerNorm: forward and every gradient against the
// unfused torch ops in double, with and without dropout.
#include "berth/kernels/residual_layer_norm.h"

#include "berth/kernels/dropout.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

void check_layer_norm_against_reference(int64_t cols, double p) {
  torch::manual_seed(4);
  auto param = [](at::Tensor t) { return t.requires_grad_(true); };
  at::Tensor hidden = param(torch::randn({3, 5, cols}));
  at::Tensor bias = param(0.3 * torch::randn({cols}));
  at::Tensor residual = param(torch::randn({3, 5, cols}));
  at::Tensor gamma = param(1 + 0.2 * torch::randn({cols}));
  at::Tensor beta = param(0.1 * torch::randn({cols}));
  at::Tensor upstream = torch::randn({3, 5, cols});
  const double eps = 1e-12;

  torch::manual_seed(8);
  at::Tensor out = berth::kernels::residual_layer_norm(hidden, bias, residual, gamma, beta, eps, p, true);
  out.backward(upstream);
  torch::manual_seed(8);
  at::Tensor drop = berth::kernels::dropout(torch::ones({3, 5, cols}), p, true).to(at::kDouble);

  std::vector<at::Tensor> fused = {hidden, bias, residual, gamma, beta};
  std::vector<at::Tensor> ref;
  for (const at::Tensor& t : fused) ref.push_back(t.detach().to(at::kDouble).requires_grad_(true));
  at::Tensor expected = torch::layer_norm((ref[0] + ref[1]) * drop + ref[2], {cols}, ref[3], ref[4], eps);
  expected.backward(upstream.to(at::kDouble));
  EXPECT_TRUE(torch::allclose(out.to(at::kDouble), expected, 1e-5, 1e-5)) << "cols=" << cols << " p=" << p;
  const char* names[] = {"hidden", "bias", "residual", "gamma", "beta"};
  for (size_t i = 0; i < fused.size(); ++i) {
    at::Tensor got = fused[i].grad().to(at::kDouble);
    EXPECT_TRUE(torch::allclose(got, ref[i].grad(), 1e-4, 1e-5))
        << names[i] << " cols=" << cols << " p=" << p << " max diff "
        << (got - ref[i].grad()).abs().max().item<double>();
  }
}

TEST(ResidualLayerNormKernel, MatchesUnfusedOpsWithoutDropout) {
  for (int64_t cols : {13, 64, 256}) check_layer_norm_against_reference(cols, 0.0);
}

TEST(ResidualLayerNormKernel, MatchesUnfusedOpsWithDropout) {
  for (int64_t cols : {13, 256}) check_layer_norm_against_reference(cols, 0.1);
}

TEST(ResidualLayerNormKernel, EvalRunsThePlainOps) {
  at::Tensor h = torch::randn({4, 10}), b = torch::randn({10}), r = torch::randn({4, 10});
  at::Tensor g = torch::rand({10}), be = torch::randn({10});
  at::Tensor ref = torch::layer_norm(h + b + r, {10}, g, be, 1e-5);
  EXPECT_TRUE(berth::kernels::residual_layer_norm(h, b, r, g, be, 1e-5, 0.5, false).equal(ref));
}

}  // namespace
