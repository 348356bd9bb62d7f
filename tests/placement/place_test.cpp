// Tests for berth::place and berth::module_device, moving between cpu and meta (a real second device on any
// build).
#include "berth/placement/place.h"

#include "berth/core/error.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

namespace {

const c10::Device kCpuDevice(c10::kCPU);
const c10::Device kMetaDevice(c10::kMeta);

// embed 48 B + 16 B, norm 16 + 16 (parameters) + 16 + 16 + 8 (buffers), head 32 + 8: 9 tensors, 176 B.
struct PlaceNetImpl : torch::nn::Module {
  PlaceNetImpl() {
    embed = register_module("embed", torch::nn::Linear(3, 4));
    norm = register_module("norm", torch::nn::BatchNorm1d(4));
    head = register_module("head", torch::nn::Linear(4, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return head(norm(embed(x))); }
  torch::nn::Linear embed{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(PlaceNet);

template <typename Fn>
std::string place_error(Fn&& fn) {
  return berth::testing::error_text<berth::PlacementError>(std::forward<Fn>(fn));
}

using berth::testing::contains;

TEST(Place, MoveCpuToMetaReportsAndKeepsModuleHandles) {
  PlaceNet net;
  const berth::PlacementReport report = berth::place(*net, kMetaDevice, berth::PlacementPolicy::Move);
  EXPECT_EQ(report.total_tensors, 9);
  EXPECT_EQ(report.total_bytes, 176);
  EXPECT_EQ(report.moved_tensors, 9);
  EXPECT_EQ(report.moved_bytes, 176);
  EXPECT_EQ(report.moved_grads, 0);
  ASSERT_EQ(report.moved_from.size(), 1u);
  EXPECT_EQ(report.moved_from[0].device, kCpuDevice);
  EXPECT_EQ(report.moved_from[0].count, 9);
  EXPECT_EQ(report.summary(), "placement: moved 9 tensors (176 B) to meta: 9 from cpu");

  // The module's own members see the move: it happened inside their TensorImpls.
  EXPECT_TRUE(net->embed->weight.is_meta());
  EXPECT_TRUE(net->head->bias.is_meta());
  EXPECT_TRUE(net->norm->running_mean.is_meta());
  EXPECT_TRUE(net->norm->num_batches_tracked.is_meta());
  EXPECT_TRUE(net->embed->weight.requires_grad());
  EXPECT_FALSE(net->norm->running_mean.requires_grad());
  EXPECT_EQ(net->embed->weight.sizes(), (std::vector<int64_t>{4, 3}));

  // Not through norm: libtorch 1.13 has no meta kernel for batch_norm.
  const torch::Tensor out = net->head(net->embed(torch::ones({5, 3}, kMetaDevice)));
  EXPECT_TRUE(out.is_meta());
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{5, 2}));
}

TEST(Place, BackwardAfterTheMoveAccumulatesOnTheNewDevice) {
  torch::nn::Linear linear(3, 2);
  // A graph from before the move keeps the weight's cpu grad accumulator alive.
  const torch::Tensor old_graph = linear->forward(torch::ones({1, 3})).sum();
  berth::place(*linear, kMetaDevice);
  linear->forward(torch::ones({1, 3}, kMetaDevice)).sum().backward();
  EXPECT_TRUE(linear->weight.grad().is_meta());
  EXPECT_EQ(linear->weight.grad().sizes(), (std::vector<int64_t>{2, 3}));
}

TEST(Place, ParametersAnOptimizerHoldsMoveToo) {
  PlaceNet net;
  torch::optim::SGD sgd(net->parameters(), 0.1);
  berth::place(*net, kMetaDevice);
  for (const auto& p : sgd.param_groups()[0].params()) EXPECT_TRUE(p.is_meta());
}

TEST(Place, NothingToMoveSaysSo) {
  PlaceNet net;
  const berth::PlacementReport report = berth::place(*net, kCpuDevice);
  EXPECT_EQ(report.moved_tensors, 0);
  EXPECT_FALSE(report.moved_anything());
  EXPECT_EQ(report.summary(), "placement: all 9 tensors already on cpu");
}

TEST(Place, MovesGradsWithTheirParameters) {
  PlaceNet net;
  net->forward(torch::ones({5, 3})).sum().backward();
  const berth::PlacementReport report = berth::place(*net, kMetaDevice);
  EXPECT_EQ(report.moved_grads, 6);
  EXPECT_EQ(report.moved_grad_bytes, 48 + 16 + 16 + 16 + 32 + 8);
  EXPECT_EQ(report.summary(), "placement: moved 9 tensors (176 B) to meta: 9 from cpu; and 6 grads (136 B)");
  EXPECT_TRUE(net->embed->weight.grad().is_meta());
  EXPECT_TRUE(net->head->bias.grad().is_meta());
  EXPECT_EQ(net->embed->weight.grad().sizes(), (std::vector<int64_t>{4, 3}));
}

TEST(Place, MovingOffMetaThrowsNamingTheUnmaterialisedTensors) {
  PlaceNet net;
  berth::place(*net->head, kMetaDevice);
  const std::string text = place_error([&] { berth::place(*net, kCpuDevice, berth::PlacementPolicy::Move); });
  EXPECT_EQ(
      text,
      "model placement: cannot move 2 tensors from meta to cpu: meta tensors have a shape and dtype but no "
      "data, so these were never materialised:\n"
      "  meta: 2 tensors (40 B): head.weight, head.bias\n"
      "Fix: load the weights (torch::load, from_pretrained) or initialise the model on a real device before "
      "berth places it. Nothing was moved.");
}

TEST(Place, MetaTensorsStayWhenTheTargetIsMeta) {
  torch::nn::Module module;
  module.register_parameter("w", torch::empty({2, 5}, torch::TensorOptions().device(kMetaDevice)));
  module.register_buffer("b", torch::zeros({3}));
  const berth::PlacementReport report = berth::place(module, kMetaDevice);
  EXPECT_EQ(report.moved_tensors, 1);
  EXPECT_EQ(report.moved_bytes, 12);
  EXPECT_EQ(report.summary(), "placement: moved 1 tensor (12 B) to meta: 1 from cpu");
}

TEST(Place, StrictWithMixedDevicesExplainsAndMovesNothing) {
  PlaceNet net;
  berth::place(*net->head, kMetaDevice);
  const std::string text =
      place_error([&] { berth::place(*net, kCpuDevice, berth::PlacementPolicy::Strict); });
  EXPECT_EQ(text,
            "model placement: expected every parameter and buffer on cpu, found 2 of 9 elsewhere:\n"
            "  meta: 2 tensors (40 B): head.weight, head.bias\n"
            "Fix: return the model on cpu from model_init and let berth place it, or set placement=move.");
  EXPECT_TRUE(net->head->weight.is_meta());
  EXPECT_FALSE(net->embed->weight.is_meta());
}

TEST(Place, StrictListsFirstNamesAndCountsTheRest) {
  PlaceNet net;
  const std::string text =
      place_error([&] { berth::place(*net, kMetaDevice, berth::PlacementPolicy::Strict); });
  EXPECT_TRUE(contains(text,
                       "expected every parameter and buffer on meta, found 9 of 9 elsewhere:\n"
                       "  cpu: 9 tensors (176 B): embed.weight, embed.bias, norm.weight, and 6 more\n"))
      << text;
  EXPECT_FALSE(net->embed->weight.is_meta());
}

TEST(Place, StrictWithEverythingInPlaceReturnsAReport) {
  PlaceNet net;
  berth::PlacementReport report;
  EXPECT_NO_THROW(report = berth::place(*net, kCpuDevice, berth::PlacementPolicy::Strict));
  EXPECT_EQ(report.total_tensors, 9);
  EXPECT_EQ(report.summary(), "placement: all 9 tensors already on cpu");
}

TEST(Place, ParsesAndPrintsPolicies) {
  EXPECT_EQ(berth::parse_placement_policy("move"), berth::PlacementPolicy::Move);
  EXPECT_EQ(berth::parse_placement_policy(" Strict "), berth::PlacementPolicy::Strict);
  EXPECT_EQ(berth::to_string(berth::PlacementPolicy::Move), "move");
  EXPECT_EQ(berth::to_string(berth::PlacementPolicy::Strict), "strict");
  try {
    berth::parse_placement_policy("copy");
    ADD_FAILURE() << "expected berth::Error";
  } catch (const berth::Error& error) {
    const std::string text = error.what();
    EXPECT_TRUE(contains(text, "found \"copy\"")) << text;
    EXPECT_TRUE(contains(text, "set placement=move or placement=strict")) << text;
  }
}

TEST(Place, ModuleDeviceIsTheOneDeviceOrExplainsTheMix) {
  PlaceNet net;
  EXPECT_EQ(berth::module_device(*net), kCpuDevice);
  torch::nn::Module empty;
  EXPECT_EQ(berth::module_device(empty), std::nullopt);

  berth::place(*net->head, kMetaDevice);
  const std::string text = place_error([&] { berth::module_device(*net); });
  EXPECT_TRUE(contains(text,
                       "the model's 9 parameters and buffers are spread over 2 devices; expected one:\n"
                       "  cpu: 7 tensors (136 B): embed.weight, embed.bias, norm.weight, and 4 more\n"
                       "  meta: 2 tensors (40 B): head.weight, head.bias\n"
                       "Fix: berth::place(module, device, PlacementPolicy::Move)"))
      << text;
  berth::place(*net, kMetaDevice);
  EXPECT_EQ(berth::module_device(*net), kMetaDevice);
}

}  // namespace
