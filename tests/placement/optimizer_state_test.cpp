// Tests for optimizer state placement: Adam, SGD and friends with state and parameters split over cpu and
// meta.
#include "berth/placement/optimizer_state.h"

#include "berth/core/compat.h"
#include "berth/core/error.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

namespace {

const c10::Device kOptimizerStateCpu(c10::kCPU);
const c10::Device kOptimizerStateMeta(c10::kMeta);

// fc1 48 B + 16 B, fc2 32 B + 8 B: four parameters, 104 B.
struct OptimNetImpl : torch::nn::Module {
  OptimNetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(3, 4));
    fc2 = register_module("fc2", torch::nn::Linear(4, 2));
  }
  // tanh rather than relu: libtorch 1.13 has no meta kernel for relu, and steps here also run on meta.
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::tanh(fc1(x))); }
  torch::nn::Linear fc1{nullptr};
  torch::nn::Linear fc2{nullptr};
};
TORCH_MODULE(OptimNet);

void optimizer_state_train_step(OptimNet& net, torch::optim::Optimizer& optimizer, c10::Device device) {
  optimizer.zero_grad();
  net->forward(torch::ones({5, 3}, torch::TensorOptions().device(device))).sum().backward();
  optimizer.step();
}

template <typename State>
State& state_of(torch::optim::Optimizer& optimizer, const torch::Tensor& param) {
  return dynamic_cast<State&>(*optimizer.state().at(berth::compat::optimizer_state_key(param)));
}

template <typename Fn>
std::string optimizer_placement_error(Fn&& fn) {
  return berth::testing::error_text<berth::PlacementError>(std::forward<Fn>(fn));
}

std::vector<std::string> state_names_of(const berth::OptimizerStateInspection& inspection,
                                        const std::string& param) {
  std::vector<std::string> names;
  for (const auto& t : inspection.tensors) {
    if (t.param_name == param) names.push_back(t.state_name);
  }
  return names;
}

TEST(OptimizerState, InspectsAdamStateAfterAStep) {
  OptimNet net;
  torch::optim::Adam adam(net->parameters(), 0.01);
  const berth::OptimizerStateInspection before = berth::inspect_optimizer_state(adam, net.get());
  EXPECT_EQ(before.params, 4);
  EXPECT_EQ(before.params_with_state, 0);
  EXPECT_TRUE(before.tensors.empty());

  optimizer_state_train_step(net, adam, kOptimizerStateCpu);
  const berth::OptimizerStateInspection inspection = berth::inspect_optimizer_state(adam, net.get());
  EXPECT_EQ(inspection.params_with_state, 4);
  ASSERT_EQ(inspection.tensors.size(), 8u);
  EXPECT_EQ(inspection.tensors[0].param_name, "fc1.weight");
  EXPECT_EQ(inspection.tensors[0].state_name, "exp_avg");
  EXPECT_EQ(inspection.tensors[0].bytes, 48);
  EXPECT_EQ(inspection.tensors[1].state_name, "exp_avg_sq");
  EXPECT_EQ(inspection.tensors[7].param_name, "fc2.bias");
  EXPECT_TRUE(inspection.misplaced().empty());
  EXPECT_TRUE(inspection.unknown_states.empty());

  const berth::OptimizerStateInspection unnamed = berth::inspect_optimizer_state(adam);
  EXPECT_EQ(unnamed.tensors[2].param_name, "param_groups[0].params[1]");
  EXPECT_NO_THROW(berth::check_optimizer_state(adam, net.get()));
}

TEST(OptimizerState, CheckNamesStateOnAnotherDeviceThanItsParameter) {
  OptimNet net;
  torch::optim::Adam adam(net->parameters(), 0.01);
  optimizer_state_train_step(net, adam, kOptimizerStateCpu);
  auto& state = state_of<torch::optim::AdamParamState>(adam, net->fc1->weight);
  state.exp_avg(state.exp_avg().to(kOptimizerStateMeta));

  const std::string text = optimizer_placement_error([&] { berth::check_optimizer_state(adam, net.get()); });
  EXPECT_EQ(
      text,
      "optimizer state: 1 state tensor (of 1 parameter) is on another device than the parameter:\n"
      "  fc1.weight on cpu: exp_avg on meta (48 B)\n"
      "Fix: berth::place_optimizer_state(optimizer) moves every state tensor to its parameter's device; "
      "berth's Trainer does this on resume.");
  const std::string unnamed = optimizer_placement_error([&] { berth::check_optimizer_state(adam); });
  EXPECT_NE(unnamed.find("  param_groups[0].params[0] on cpu: exp_avg on meta (48 B)\n"), std::string::npos)
      << unnamed;

  // Meta state holds no moments to bring back, so Move refuses rather than inventing them.
  const std::string move = optimizer_placement_error(
      [&] { berth::place_optimizer_state(adam, berth::PlacementPolicy::Move, net.get()); });
  EXPECT_NE(move.find("cannot move 1 state tensor from meta to its parameter's device"), std::string::npos)
      << move;
  EXPECT_NE(move.find("never materialised:\n  fc1.weight on cpu: exp_avg on meta (48 B)\n"),
            std::string::npos)
      << move;
  EXPECT_TRUE(state.exp_avg().is_meta());
}

TEST(OptimizerState, MoveMakesStateFollowItsParametersAndStepsWorkAgain) {
  OptimNet net;
  torch::optim::Adam adam(net->parameters(), 0.01);
  optimizer_state_train_step(net, adam, kOptimizerStateCpu);
  berth::place(
      *net,
      kOptimizerStateMeta);  // the parameters move; Adam's state stays on cpu, as after a careless resume

  const std::string text = optimizer_placement_error([&] { berth::check_optimizer_state(adam, net.get()); });
  EXPECT_NE(
      text.find(
          "optimizer state: 8 state tensors (of 4 parameters) are on another device than the parameter:\n"
          "  fc1.weight on meta: exp_avg on cpu (48 B), exp_avg_sq on cpu (48 B)\n"
          "  fc1.bias on meta: exp_avg on cpu (16 B), exp_avg_sq on cpu (16 B)\n"),
      std::string::npos)
      << text;
  try {
    optimizer_state_train_step(net, adam, kOptimizerStateMeta);
    ADD_FAILURE() << "Adam should refuse parameters and state on different devices";
  } catch (const c10::Error& error) {
    const std::string what = error.what_without_backtrace();
    EXPECT_NE(what.find("device"), std::string::npos) << what;
  }

  const berth::OptimizerStatePlacementReport report =
      berth::place_optimizer_state(adam, berth::PlacementPolicy::Move, net.get());
  EXPECT_EQ(report.state_tensors, 8);
  EXPECT_EQ(report.moved_tensors, 8);
  EXPECT_EQ(report.moved_bytes, 208);
  ASSERT_EQ(report.moved_from.size(), 1u);
  EXPECT_EQ(report.moved_from[0].device, kOptimizerStateCpu);
  EXPECT_EQ(report.moved_from[0].first_names[0], "fc1.weight.exp_avg");
  EXPECT_EQ(report.summary(),
            "optimizer state: moved 8 tensors (208 B) to follow their parameters: 8 from cpu");

  EXPECT_NO_THROW(berth::check_optimizer_state(adam, net.get()));
  EXPECT_TRUE(state_of<torch::optim::AdamParamState>(adam, net->fc2->bias).exp_avg_sq().is_meta());
  EXPECT_NO_THROW(optimizer_state_train_step(net, adam, kOptimizerStateMeta));

  const berth::OptimizerStatePlacementReport again = berth::place_optimizer_state(adam);
  EXPECT_EQ(again.moved_tensors, 0);
  EXPECT_EQ(again.summary(), "optimizer state: all 8 tensors already on their parameters' devices");
}

TEST(OptimizerState, SgdMomentumBuffers) {
  OptimNet net;
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  optimizer_state_train_step(net, sgd, kOptimizerStateCpu);
  auto& state = state_of<torch::optim::SGDParamState>(sgd, net->fc2->weight);
  state.momentum_buffer(state.momentum_buffer().to(kOptimizerStateMeta));
  const std::string text = optimizer_placement_error([&] { berth::check_optimizer_state(sgd, net.get()); });
  EXPECT_NE(text.find("  fc2.weight on cpu: momentum_buffer on meta (32 B)\n"), std::string::npos) << text;

  state.momentum_buffer(torch::zeros({2, 4}));
  berth::place(*net, kOptimizerStateMeta);
  const berth::OptimizerStatePlacementReport report = berth::place_optimizer_state(sgd);
  EXPECT_EQ(report.moved_tensors, 4);
  EXPECT_EQ(report.moved_bytes, 104);
  EXPECT_TRUE(state.momentum_buffer().is_meta());
  EXPECT_NO_THROW(optimizer_state_train_step(net, sgd, kOptimizerStateMeta));
}

TEST(OptimizerState, StrictChecksWithoutMoving) {
  OptimNet net;
  torch::optim::Adam adam(net->parameters(), 0.01);
  optimizer_state_train_step(net, adam, kOptimizerStateCpu);
  const berth::OptimizerStatePlacementReport ok =
      berth::place_optimizer_state(adam, berth::PlacementPolicy::Strict);
  EXPECT_EQ(ok.state_tensors, 8);
  EXPECT_EQ(ok.moved_tensors, 0);

  berth::place(*net, kOptimizerStateMeta);
  const std::string text =
      optimizer_placement_error([&] { berth::place_optimizer_state(adam, berth::PlacementPolicy::Strict); });
  EXPECT_NE(text.find("8 state tensors (of 4 parameters) are on another device"), std::string::npos) << text;
  EXPECT_FALSE(state_of<torch::optim::AdamParamState>(adam, net->fc1->weight).exp_avg().is_meta());
}

TEST(OptimizerState, FindsTheTensorsOfEveryKnownOptimizer) {
  {
    OptimNet net;
    torch::optim::AdamW adamw(net->parameters(), torch::optim::AdamWOptions(0.01).amsgrad(true));
    optimizer_state_train_step(net, adamw, kOptimizerStateCpu);
    EXPECT_EQ(state_names_of(berth::inspect_optimizer_state(adamw, net.get()), "fc1.bias"),
              (std::vector<std::string>{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}));
  }
  {
    OptimNet net;
    torch::optim::Adagrad adagrad(net->parameters(), 0.01);
    optimizer_state_train_step(net, adagrad, kOptimizerStateCpu);
    EXPECT_EQ(state_names_of(berth::inspect_optimizer_state(adagrad, net.get()), "fc1.bias"),
              std::vector<std::string>{"sum"});
  }
  {
    OptimNet net;
    torch::optim::RMSprop rmsprop(net->parameters(),
                                  torch::optim::RMSpropOptions(0.01).momentum(0.9).centered(true));
    optimizer_state_train_step(net, rmsprop, kOptimizerStateCpu);
    EXPECT_EQ(state_names_of(berth::inspect_optimizer_state(rmsprop, net.get()), "fc1.bias"),
              (std::vector<std::string>{"square_avg", "momentum_buffer", "grad_avg"}));
    berth::place(*net, kOptimizerStateMeta);
    EXPECT_EQ(berth::place_optimizer_state(rmsprop).moved_tensors, 12);
  }
}

// A state type berth has never heard of, as a custom optimizer would define.
struct CustomState : torch::optim::OptimizerCloneableParamState<CustomState> {
  torch::Tensor accumulator = torch::zeros({4, 3});
};

TEST(OptimizerState, UnknownStateTypesAreReportedAndLeftAlone) {
  OptimNet net;
  torch::optim::SGD sgd(net->parameters(), 0.1);
  sgd.state()[berth::compat::optimizer_state_key(net->fc1->weight)] = std::make_unique<CustomState>();
  const berth::OptimizerStateInspection inspection = berth::inspect_optimizer_state(sgd, net.get());
  EXPECT_EQ(inspection.params_with_state, 1);
  EXPECT_TRUE(inspection.tensors.empty());
  ASSERT_EQ(inspection.unknown_states.size(), 1u);
  EXPECT_NE(inspection.unknown_states[0].find("fc1.weight: unknown state type "), std::string::npos);
  EXPECT_NE(inspection.unknown_states[0].find("CustomState"), std::string::npos)
      << inspection.unknown_states[0];

  berth::place(*net, kOptimizerStateMeta);
  EXPECT_NO_THROW(berth::check_optimizer_state(sgd, net.get()));
  const berth::OptimizerStatePlacementReport report =
      berth::place_optimizer_state(sgd, berth::PlacementPolicy::Move);
  EXPECT_EQ(report.moved_tensors, 0);
  EXPECT_EQ(report.summary(), "optimizer state: no state tensors yet; 1 state of unknown type left alone");
}

}  // namespace
