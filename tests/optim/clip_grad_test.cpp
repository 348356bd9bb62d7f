// Tests for clip_grad_norm against torch.nn.utils.clip_grad_norm_ (goldens from
// tests/goldens/optim_goldens.py).
#include "berth/optim/clip_grad.h"

#include "optim/optim_test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

c10::ScalarType dtype_of(const std::string& name) {
  return name == "float64" ? torch::kFloat64 : torch::kFloat32;
}

std::vector<at::Tensor> params_with_golden_grads(const nlohmann::json& c) {
  const c10::ScalarType dtype = dtype_of(c.at("dtype"));
  std::vector<at::Tensor> params;
  for (const auto& grad : c.at("grads")) {
    at::Tensor g = berth::testing::golden_tensor(grad, dtype);
    at::Tensor p = torch::zeros_like(g).requires_grad_(true);
    p.mutable_grad() = g;
    params.push_back(p);
  }
  return params;
}

TEST(ClipGradNorm, MatchesTorchNormAndClippedGrads) {
  const nlohmann::json golden = berth::testing::optim_golden("clip_grad.json");
  ASSERT_GE(golden.size(), 3u);
  for (const auto& c : golden) {
    const std::string name = c.at("name");
    const c10::ScalarType dtype = dtype_of(c.at("dtype"));
    const double rtol = dtype == torch::kFloat64 ? 1e-12 : 1e-6;
    std::vector<at::Tensor> params = params_with_golden_grads(c);
    // A param without grad is ignored.
    params.push_back(torch::ones({3}, dtype).requires_grad_(true));
    const double norm = berth::optim::clip_grad_norm(params, c.at("max_norm").get<double>());
    const double expected = c.at("norm").get<double>();
    EXPECT_NEAR(norm, expected, rtol * expected) << name;
    for (std::size_t i = 0; i < c.at("clipped").size(); ++i) {
      const at::Tensor clipped = berth::testing::golden_tensor(c.at("clipped")[i], dtype);
      EXPECT_LE(berth::testing::max_rel_diff(params[i].grad(), clipped, 1e-6), rtol) << name << " grad " << i;
    }
    EXPECT_FALSE(params.back().grad().defined());
  }
}

TEST(ClipGradNorm, NonPositiveMaxNormOnlyMeasures) {
  const nlohmann::json golden = berth::testing::optim_golden("clip_grad.json");
  const auto& c = golden.at(0);  // a case that clips at its max_norm
  std::vector<at::Tensor> params = params_with_golden_grads(c);
  std::vector<at::Tensor> before;
  for (const at::Tensor& p : params) before.push_back(p.grad().clone());
  const double norm = berth::optim::clip_grad_norm(params, 0.0);
  EXPECT_NEAR(norm, c.at("norm").get<double>(), 1e-6 * c.at("norm").get<double>());
  for (std::size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i].grad(), before[i]));
}

TEST(ClipGradNorm, NoGradsGiveZero) {
  std::vector<at::Tensor> params{torch::ones({2}).requires_grad_(true)};
  EXPECT_EQ(berth::optim::clip_grad_norm(params, 1.0), 0.0);
  EXPECT_EQ(berth::optim::clip_grad_norm({}, 1.0), 0.0);
}

}  // namespace
