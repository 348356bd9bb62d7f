// Tests for the counter-based dropout: fraction and scaling, reproducibility under torch's seed and
// generator state, backward = the same mask, and the plain-torch fallback.
#include "berth/kernels/dropout.h"

#include "berth/kernels/fused.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

// A name of its own: at::dropout makes an unqualified dropout(tensor, ...) ambiguous (argument-dependent
// lookup).
at::Tensor counter_dropout(const at::Tensor& x, double p, bool training) {
  return berth::kernels::dropout(x, p, training);
}

TEST(DropoutKernel, KeepsOneMinusPAndScalesKeptValues) {
  for (double p : {0.1, 0.5}) {
    at::Tensor ones = torch::ones({1 << 20});
    at::Tensor out = counter_dropout(ones, p, true);
    at::Tensor kept = out.ne(0);
    const double fraction = kept.to(at::kDouble).mean().item<double>();
    // 2^20 Bernoulli draws: the standard deviation of the fraction is below 5e-4.
    EXPECT_NEAR(fraction, 1.0 - p, 3e-3) << "p=" << p;
    EXPECT_TRUE(out.masked_select(kept).eq(static_cast<float>(1.0 / (1.0 - p))).all().item<bool>());
  }
}

TEST(DropoutKernel, NeighbouringElementsAreUncorrelated) {
  torch::manual_seed(3);
  at::Tensor kept = counter_dropout(torch::ones({1 << 20}), 0.5, true).ne(0).to(at::kDouble);
  // P(both kept) for adjacent elements should be 1/4 if the hash mixes well.
  const double both = (kept.slice(0, 1) * kept.slice(0, 0, -1)).mean().item<double>();
  EXPECT_NEAR(both, 0.25, 3e-3);
}

TEST(DropoutKernel, SameTorchSeedSameMaskAndGeneratorStateReplaysIt) {
  at::Tensor x = torch::rand({64, 33});
  torch::manual_seed(11);
  at::Tensor a = counter_dropout(x, 0.3, true);
  torch::manual_seed(11);
  at::Tensor b = counter_dropout(x, 0.3, true);
  EXPECT_TRUE(a.equal(b));
  torch::manual_seed(12);
  EXPECT_FALSE(counter_dropout(x, 0.3, true).equal(a));

  at::Generator generator = at::detail::getDefaultCPUGenerator();
  at::Tensor state = generator.get_state();
  at::Tensor first = counter_dropout(x, 0.3, true);
  at::Tensor second = counter_dropout(x, 0.3, true);
  EXPECT_FALSE(first.equal(second));  // each call draws a fresh seed
  generator.set_state(state);
  EXPECT_TRUE(counter_dropout(x, 0.3, true).equal(first));
}

TEST(DropoutKernel, BackwardAppliesTheForwardMask) {
  at::Tensor x = torch::randn({37, 29}).requires_grad_(true);
  at::Tensor upstream = torch::randn({37, 29});
  torch::manual_seed(5);
  at::Tensor out = counter_dropout(x, 0.25, true);
  out.backward(upstream);
  torch::manual_seed(5);
  at::Tensor mask =
      counter_dropout(torch::ones({37, 29}), 0.25, true);  // the same seed: scale where kept, else 0
  EXPECT_TRUE(out.detach().equal(x.detach() * mask));
  EXPECT_TRUE(x.grad().equal(upstream * mask));
}

TEST(DropoutKernel, NonContiguousInputUsesItsLogicalOrder) {
  at::Tensor x = torch::randn({16, 24});
  torch::manual_seed(9);
  at::Tensor a = counter_dropout(x.t(), 0.4, true);
  torch::manual_seed(9);
  at::Tensor b = counter_dropout(x.t().contiguous(), 0.4, true);
  EXPECT_TRUE(a.equal(b));
}

TEST(DropoutKernel, EvalZeroAndOneAndOtherDtypes) {
  at::Tensor x = torch::randn({8, 8});
  EXPECT_TRUE(counter_dropout(x, 0.5, false).equal(x));
  EXPECT_TRUE(counter_dropout(x, 0.0, true).equal(x));
  EXPECT_TRUE(counter_dropout(x, 1.0, true).eq(0).all().item<bool>());
  // double is not fused: torch::dropout, still inverted dropout.
  at::Tensor d = counter_dropout(torch::ones({4096}, at::kDouble), 0.5, true);
  EXPECT_TRUE((d.eq(0) | d.eq(2.0)).all().item<bool>());
}

TEST(DropoutKernel, SwitchedOffFallsBackToTorch) {
  berth::kernels::set_fused_enabled(false);
  torch::manual_seed(1);
  at::Tensor a = counter_dropout(torch::ones({1000}), 0.5, true);
  torch::manual_seed(1);
  at::Tensor b = torch::dropout(torch::ones({1000}), 0.5, true);
  berth::kernels::set_fused_enabled(true);
  EXPECT_TRUE(a.equal(b));
}

}  // namespace
