// Tests for the fused bias + exact GELU: forward and gradients against torch's gelu in double, over a
// range that covers both tails.
#include "berth/kernels/bias_gelu.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

TEST(BiasGeluKernel, MatchesTorchGeluInDouble) {
  torch::manual_seed(2);
  for (int64_t cols : {5, 64, 1024}) {
    at::Tensor hidden = (4 * torch::randn({6, cols})).requires_grad_(true);
    at::Tensor bias = torch::randn({cols}).requires_grad_(true);
    at::Tensor upstream = torch::randn({6, cols});
    at::Tensor out = berth::kernels::bias_gelu(hidden, bias, true);
    out.backward(upstream);
    at::Tensor h = hidden.detach().to(at::kDouble).requires_grad_(true);
    at::Tensor b = bias.detach().to(at::kDouble).requires_grad_(true);
    at::Tensor ref = torch::gelu(h + b);
    ref.backward(upstream.to(at::kDouble));
    EXPECT_TRUE(torch::allclose(out.to(at::kDouble), ref, 1e-6, 1e-6))
        << "cols=" << cols << " max diff " << (out.to(at::kDouble) - ref).abs().max().item<double>();
    EXPECT_TRUE(torch::allclose(hidden.grad().to(at::kDouble), h.grad(), 1e-5, 1e-6)) << "cols=" << cols;
    EXPECT_TRUE(torch::allclose(bias.grad().to(at::kDouble), b.grad(), 1e-5, 1e-5)) << "cols=" << cols;
  }
}

TEST(BiasGeluKernel, FarTailsAreAccurate) {
  at::Tensor x = torch::tensor({-30.0f, -9.0f, -5.0f, 0.0f, 5.0f, 9.0f, 30.0f});
  at::Tensor out = berth::kernels::bias_gelu(x, torch::zeros({7}), true);
  // The exact value, u·erfc(−u/√2)/2 in double: torch's gelu, x·(1 + erf(x/√2))/2, cancels in the negative
  // tail (float: 4% off at −5; double: 0 at −9).
  at::Tensor u = x.to(at::kDouble);
  at::Tensor ref = 0.5 * u * torch::erfc(-u / std::sqrt(2.0));
  // Relative even where gelu is 1e-19; the float argument's own rounding (u² near 40 at u = −9) bounds any
  // float GELU to about 1e-5 there.
  EXPECT_TRUE(torch::allclose(out.to(at::kDouble), ref, 3e-5, 1e-30)) << out << ref;
}

TEST(BiasGeluKernel, EvalRunsThePlainOps) {
  at::Tensor h = torch::randn({3, 8}), b = torch::randn({8});
  EXPECT_TRUE(berth::kernels::bias_gelu(h, b, false).equal(torch::gelu(h + b)));
}

}  // namespace
