// Tests for berth's AdamW: torch.optim.AdamW parity (goldens from tests/goldens/optim_goldens.py) on the
// fused float32 path and the float64 fallback, fused == torch-ops path, skipped params, options and errors.
#include "berth/optim/adamw.h"

#include "berth/core/compat.h"
#include "optim/optim_test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>

namespace {

using berth::optim::AdamW;
using berth::optim::AdamWOptions;
using berth::optim::NamedParamGroup;

struct GoldenRun {
  std::map<std::string, at::Tensor> params;
  std::vector<NamedParamGroup> groups;
  AdamWOptions options;
};

GoldenRun golden_run(const nlohmann::json& golden, c10::ScalarType dtype) {
  GoldenRun run;
  for (const auto& [name, value] : golden.at("initial").items())
    run.params[name] = berth::testing::golden_tensor(value, dtype).requires_grad_(true);
  NamedParamGroup decay;
  decay.weight_decay = golden.at("weight_decay").get<double>();
  for (const auto& name : golden.at("decay")) {
    decay.names.push_back(name);
    decay.params.push_back(run.params.at(name));
  }
  NamedParamGroup no_decay;
  for (const auto& name : golden.at("no_decay")) {
    no_decay.names.push_back(name);
    no_decay.params.push_back(run.params.at(name));
  }
  run.groups = {decay, no_decay};
  run.options.lr = golden.at("lr").get<double>();
  run.options.beta1 = golden.at("beta1").get<double>();
  run.options.beta2 = golden.at("beta2").get<double>();
  run.options.eps = golden.at("eps").get<double>();
  return run;
}

// Steps berth's AdamW through the golden's grads and checks every param after every step.
std::unique_ptr<AdamW> expect_matches_torch(const nlohmann::json& golden, c10::ScalarType dtype, double rtol,
                                            GoldenRun& run) {
  auto optimizer = std::make_unique<AdamW>(run.groups, run.options);
  const auto& steps = golden.at("steps");
  for (std::size_t s = 0; s < steps.size(); ++s) {
    for (auto& [name, p] : run.params) {
      const auto& grads = steps[s].at("grads");
      if (grads.contains(name)) {
        p.mutable_grad() = berth::testing::golden_tensor(grads.at(name), dtype);
      } else {
        p.mutable_grad().reset();
      }
    }
    optimizer->step();
    for (const auto& [name, p] : run.params) {
      const at::Tensor expected = berth::testing::golden_tensor(steps[s].at("params").at(name), dtype);
      EXPECT_LE(berth::testing::max_rel_diff(p, expected, dtype == torch::kFloat32 ? 1e-3 : 1e-9), rtol)
          << name << " after step " << s + 1;
    }
  }
  return optimizer;
}

TEST(AdamW, Float32FusedPathMatchesTorchAdamWWithTwoGroups) {
  const nlohmann::json golden = berth::testing::optim_golden("adamw.json").at("float32");
  GoldenRun run = golden_run(golden, torch::kFloat32);
  const std::unique_ptr<AdamW> optimizer = expect_matches_torch(golden, torch::kFloat32, 1e-6, run);
  // Every update of these contiguous float32 CPU params went through the fused kernel.
  EXPECT_GT(optimizer->fused_updates(), 0);
  EXPECT_EQ(optimizer->fallback_updates(), 0);
}

TEST(AdamW, Float64FallbackPathMatchesTorchAdamW) {
  const nlohmann::json golden = berth::testing::optim_golden("adamw.json").at("float64");
  GoldenRun run = golden_run(golden, torch::kFloat64);
  const std::unique_ptr<AdamW> optimizer = expect_matches_torch(golden, torch::kFloat64, 1e-12, run);
  EXPECT_EQ(optimizer->fused_updates(), 0);
  EXPECT_GT(optimizer->fallback_updates(), 0);
}

TEST(AdamW, ParamsWithoutGradAreSkippedAndKeepTheirStepCount) {
  const nlohmann::json golden = berth::testing::optim_golden("adamw.json").at("float32");
  GoldenRun run = golden_run(golden, torch::kFloat32);
  const std::unique_ptr<AdamW> optimizer = expect_matches_torch(golden, torch::kFloat32, 1e-6, run);
  // 5 steps; the golden drops classifier.bias's grad in one step and dense.weight's in another.
  const int64_t steps = static_cast<int64_t>(golden.at("steps").size());
  int64_t skipped = 0;
  for (const auto& [name, p] : run.params) {
    int64_t with_grad = 0;
    for (const auto& step : golden.at("steps")) with_grad += step.at("grads").contains(name) ? 1 : 0;
    const auto& state = dynamic_cast<torch::optim::AdamWParamState&>(
        *optimizer->state().at(berth::compat::optimizer_state_key(p)));
    EXPECT_EQ(state.step(), with_grad) << name;
    skipped += steps - with_grad;
  }
  EXPECT_EQ(skipped, 2);
  EXPECT_EQ(optimizer->fused_updates(), steps * static_cast<int64_t>(run.params.size()) - 2);
}

// BERT-like shapes with grads of a wide range of sizes.
std::vector<at::Tensor> random_params(c10::ScalarType dtype) {
  torch::manual_seed(7);
  std::vector<at::Tensor> out;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{300, 64}, {64}, {64, 64}, {1}, {70001}})
    out.push_back(torch::randn(shape, torch::TensorOptions().dtype(dtype)));
  return out;
}

std::vector<NamedParamGroup> groups_of(const std::vector<at::Tensor>& params) {
  NamedParamGroup decay{{"a", "c", "e"}, {params[0], params[2], params[4]}, 0.01};
  NamedParamGroup no_decay{{"b", "d"}, {params[1], params[3]}, 0.0};
  return {decay, no_decay};
}

template <typename Optimizer>
void run_steps(Optimizer& optimizer, std::vector<at::Tensor>& params, int steps) {
  for (int s = 0; s < steps; ++s) {
    for (std::size_t i = 0; i < params.size(); ++i) {
      at::Tensor grad =
          torch::randn(params[i].sizes(), torch::TensorOptions().dtype(params[i].scalar_type())) *
          std::pow(10.0, s % 4 - 2);
      params[i].mutable_grad() = grad;
    }
    optimizer.step();
  }
}

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : params) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

TEST(AdamW, FusedKernelEqualsTheTorchOpsPath) {
  std::vector<at::Tensor> base = random_params(torch::kFloat32);
  std::vector<at::Tensor> fused_params = clones(base);
  std::vector<at::Tensor> ops_params = clones(base);
  AdamWOptions options;
  options.lr = 1e-3;
  AdamW fused(groups_of(fused_params), options);
  AdamW ops(groups_of(ops_params), options);
  ops.set_fused_enabled(false);
  torch::manual_seed(11);
  run_steps(fused, fused_params, 6);
  torch::manual_seed(11);
  run_steps(ops, ops_params, 6);
  EXPECT_EQ(fused.fused_updates(), 30);
  EXPECT_EQ(fused.fallback_updates(), 0);
  EXPECT_EQ(ops.fused_updates(), 0);
  EXPECT_EQ(ops.fallback_updates(), 30);
  for (std::size_t i = 0; i < base.size(); ++i)
    // Relative to max(|x|, 1e-3): elements near 0 keep the absolute rounding of the larger terms.
    EXPECT_LE(berth::testing::max_rel_diff(fused_params[i], ops_params[i], 1e-3), 1e-6) << "param " << i;
}

TEST(AdamW, TorchOpsPathIsTorchsOwnAdamWBitForBit) {
  std::vector<at::Tensor> base = random_params(torch::kFloat64);
  std::vector<at::Tensor> ours_params = clones(base);
  std::vector<at::Tensor> torch_params = clones(base);
  AdamW ours(groups_of(ours_params), AdamWOptions{});
  torch::optim::AdamWOptions decay_options(AdamWOptions{}.lr);
  decay_options.weight_decay(0.01);
  torch::optim::AdamWOptions no_decay_options(AdamWOptions{}.lr);
  no_decay_options.weight_decay(0.0);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{torch_params[0], torch_params[2], torch_params[4]},
                      std::make_unique<torch::optim::AdamWOptions>(decay_options));
  groups.emplace_back(std::vector<at::Tensor>{torch_params[1], torch_params[3]},
                      std::make_unique<torch::optim::AdamWOptions>(no_decay_options));
  torch::optim::AdamW theirs(std::move(groups), decay_options);
  torch::manual_seed(3);
  run_steps(ours, ours_params, 4);
  torch::manual_seed(3);
  run_steps(theirs, torch_params, 4);
  for (std::size_t i = 0; i < base.size(); ++i)
    EXPECT_TRUE(torch::equal(ours_params[i], torch_params[i])) << i;
}

TEST(AdamW, FusedStepBumpsTheVersionCounterLikeAnInPlaceOp) {
  at::Tensor p = torch::ones({8}, torch::kFloat32).requires_grad_(true);
  AdamW optimizer({NamedParamGroup{{"p"}, {p}, 0.0}}, AdamWOptions{});
  p.mutable_grad() = torch::ones({8});
  const auto before = p._version();
  optimizer.step();
  EXPECT_EQ(optimizer.fused_updates(), 1);
  EXPECT_GT(p._version(), before);
}

TEST(AdamW, NamesLrAndZeroGradToNone) {
  std::vector<at::Tensor> params = clones(random_params(torch::kFloat32));
  AdamW optimizer(groups_of(params), AdamWOptions{});
  EXPECT_EQ(optimizer.param_names(), (std::vector<std::string>{"a", "c", "e", "b", "d"}));
  EXPECT_EQ(optimizer.lr(), 5e-5);  // HF's default learning_rate
  optimizer.set_lr(0.25);
  EXPECT_EQ(optimizer.lr(), 0.25);
  for (const auto& group : optimizer.param_groups()) EXPECT_EQ(group.options().get_lr(), 0.25);
  EXPECT_EQ(
      static_cast<const torch::optim::AdamWOptions&>(optimizer.param_groups()[0].options()).weight_decay(),
      0.01);
  EXPECT_EQ(
      static_cast<const torch::optim::AdamWOptions&>(optimizer.param_groups()[1].options()).weight_decay(),
      0.0);
  for (at::Tensor& p : params) p.mutable_grad() = torch::ones_like(p);
  optimizer.zero_grad_to_none();
  for (const at::Tensor& p : params) EXPECT_FALSE(p.grad().defined());
}

TEST(AdamW, BadGroupsAndOptionsSayWhatToFix) {
  const at::Tensor a = torch::zeros({2}).requires_grad_(true);
  berth::testing::expect_contains(berth::testing::error_text([&] {
                                    AdamW({NamedParamGroup{{"a", "b"}, {a}, 0.0}}, AdamWOptions{});
                                  }),
                                  {"param group 0 has 2 names but 1 params", "Fix:"});
  berth::testing::expect_contains(
      berth::testing::error_text([&] {
        AdamW({NamedParamGroup{{"a"}, {a}, 0.01}, NamedParamGroup{{"a2"}, {a}, 0.0}}, AdamWOptions{});
      }),
      {"'a2' is in more than one param group", "Fix:"});
  AdamWOptions bad;
  bad.beta2 = 1.0;
  berth::testing::expect_contains(berth::testing::error_text([&] {
                                    AdamW({NamedParamGroup{{"a"}, {a}, 0.0}}, bad);
                                  }),
                                  {"beta2 must be in [0, 1), found 1", "Fix:"});
}

}  // namespace
