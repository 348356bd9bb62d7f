// Tests for berth's optimizer.pt: round trips that continue bit-identically, the documented layout, wrong
// files, and the placement tools on loaded state.
#include "berth/optim/optimizer_state_file.h"

#include "berth/io/safetensors.h"
#include "berth/optim/adamw.h"
#include "berth/placement/optimizer_state.h"
#include "optim/optim_test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using berth::optim::AdamW;
using berth::optim::AdamWOptions;
using berth::optim::NamedParamGroup;

struct Params {
  std::vector<at::Tensor> tensors;  // w (4, 3), b (4,), ln.weight (4,), frozen (2,): never given a grad
  std::vector<NamedParamGroup> groups() const {
    return {NamedParamGroup{{"w"}, {tensors[0]}, 0.01},
            NamedParamGroup{{"b", "ln.weight", "frozen"}, {tensors[1], tensors[2], tensors[3]}, 0.0}};
  }
};

Params make_params() {
  torch::manual_seed(5);
  Params p;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{4, 3}, {4}, {4}, {2}})
    p.tensors.push_back(torch::randn(shape).requires_grad_(true));
  return p;
}

Params clone(const Params& params) {
  Params out;
  for (const at::Tensor& t : params.tensors) out.tensors.push_back(t.detach().clone().requires_grad_(true));
  return out;
}

void step(AdamW& optimizer, Params& params, int seed) {
  torch::manual_seed(seed);
  for (std::size_t i = 0; i + 1 < params.tensors.size(); ++i)
    params.tensors[i].mutable_grad() = torch::randn(params.tensors[i].sizes());
  optimizer.step();
}

AdamWOptions options() {
  AdamWOptions o;
  o.lr = 1e-2;
  return o;
}

TEST(OptimizerStateFile, RoundTripContinuesBitIdentically) {
  berth::testing::TempDir dir;
  Params a = make_params();
  AdamW first(a.groups(), options());
  for (int s = 0; s < 3; ++s) step(first, a, 100 + s);
  first.set_lr(3e-3);
  berth::optim::save_optimizer_state(first, dir.file("optimizer.pt"));

  Params b = clone(a);
  AdamW second(b.groups(), options());  // lr 1e-2 until the file says 3e-3
  berth::optim::load_optimizer_state(second, dir.file("optimizer.pt"));
  EXPECT_EQ(second.lr(), 3e-3);
  step(first, a, 200);
  step(second, b, 200);
  for (std::size_t i = 0; i < a.tensors.size(); ++i)
    EXPECT_TRUE(torch::equal(a.tensors[i], b.tensors[i])) << i;
  // The never-stepped parameter has no state in either.
  EXPECT_EQ(second.state().size(), 3u);
}

TEST(OptimizerStateFile, LayoutIsTheDocumentedOne) {
  berth::testing::TempDir dir;
  Params a = make_params();
  AdamW optimizer(a.groups(), options());
  for (int s = 0; s < 2; ++s) step(optimizer, a, s);
  berth::optim::save_optimizer_state(optimizer, dir.file("optimizer.pt"));
  const berth::io::SafetensorsFile file = berth::io::SafetensorsFile::open(dir.file("optimizer.pt"));
  EXPECT_EQ(file.names(), (std::vector<std::string>{"b.exp_avg", "b.exp_avg_sq", "ln.weight.exp_avg",
                                                    "ln.weight.exp_avg_sq", "w.exp_avg", "w.exp_avg_sq"}));
  EXPECT_EQ(file.shape("w.exp_avg_sq"), (std::vector<int64_t>{4, 3}));
  const auto& meta = file.metadata();
  EXPECT_EQ(meta.at("format"), "berth-adamw");
  EXPECT_EQ(meta.at("version"), "1");
  EXPECT_EQ(meta.at("step.w"), "2");
  EXPECT_EQ(meta.count("step.frozen"), 0u);
  EXPECT_EQ(std::stod(meta.at("lr")), 1e-2);
  const nlohmann::json groups = nlohmann::json::parse(meta.at("param_groups"));
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].at("params"), nlohmann::json::array({"w"}));
  EXPECT_EQ(groups[0].at("weight_decay").get<double>(), 0.01);
  EXPECT_EQ(groups[1].at("params"), nlohmann::json::array({"b", "ln.weight", "frozen"}));
  EXPECT_EQ(groups[1].at("beta2").get<double>(), 0.999);
}

TEST(OptimizerStateFile, WrongFilesNameTheFirstDifference) {
  berth::testing::TempDir dir;
  Params a = make_params();
  AdamW optimizer(a.groups(), options());
  step(optimizer, a, 1);
  berth::optim::save_optimizer_state(optimizer, dir.file("optimizer.pt"));

  // Other names.
  Params b = clone(a);
  AdamW renamed(
      {NamedParamGroup{{"weight"}, {b.tensors[0]}, 0.01},
       NamedParamGroup{{"b", "ln.weight", "frozen"}, {b.tensors[1], b.tensors[2], b.tensors[3]}, 0.0}},
      options());
  berth::testing::expect_contains(
      berth::testing::error_text(
          [&] { berth::optim::load_optimizer_state(renamed, dir.file("optimizer.pt")); }),
      {"optimizer.pt: parameter 0 is 'w' in the file but 'weight' in this optimizer", "Fix:"});
  EXPECT_TRUE(renamed.state().empty());  // nothing loaded

  // Another shape.
  Params c = clone(a);
  c.tensors[0] = torch::zeros({5, 3}).requires_grad_(true);
  AdamW reshaped(c.groups(), options());
  berth::testing::expect_contains(berth::testing::error_text([&] {
                                    berth::optim::load_optimizer_state(reshaped, dir.file("optimizer.pt"));
                                  }),
                                  {"parameter 'w' has shape [5, 3] in this optimizer but its state w.exp_avg "
                                   "has shape [4, 3] in the file",
                                   "Fix:"});

  // Fewer parameters.
  Params d = clone(a);
  AdamW fewer({NamedParamGroup{{"w"}, {d.tensors[0]}, 0.01}, NamedParamGroup{{"b"}, {d.tensors[1]}, 0.0}},
              options());
  berth::testing::expect_contains(
      berth::testing::error_text(
          [&] { berth::optim::load_optimizer_state(fewer, dir.file("optimizer.pt")); }),
      {"the file holds state for 4 parameters in 2 groups, this optimizer has 2 parameters in 2 groups",
       "first extra: 'ln.weight'"});

  // Not a berth optimizer file.
  berth::io::save_safetensors(dir.file("model.safetensors"), {{"w", torch::zeros({4, 3})}});
  berth::testing::expect_contains(
      berth::testing::error_text(
          [&] { berth::optim::load_optimizer_state(optimizer, dir.file("model.safetensors")); }),
      {"model.safetensors: expected a berth optimizer state file with metadata 'format'", "Fix:"});
}

TEST(OptimizerStateFile, LoadedStateWorksWithThePlacementTools) {
  berth::testing::TempDir dir;
  Params a = make_params();
  AdamW first(a.groups(), options());
  step(first, a, 1);
  berth::optim::save_optimizer_state(first, dir.file("optimizer.pt"));

  Params b = clone(a);
  AdamW second(b.groups(), options());
  berth::optim::load_optimizer_state(second, dir.file("optimizer.pt"));
  const berth::OptimizerStateInspection inspection = berth::inspect_optimizer_state(second);
  EXPECT_EQ(inspection.params, 4);
  EXPECT_EQ(inspection.params_with_state, 3);
  EXPECT_EQ(inspection.tensors.size(), 6u);
  EXPECT_TRUE(inspection.misplaced().empty());
  EXPECT_TRUE(inspection.unknown_states.empty());
  berth::testing::expect_contains(berth::place_optimizer_state(second).summary(),
                                  {"all 6 tensors already on their parameters' devices"});

  // state_device is honoured: state loaded onto meta is seen there, and cannot be moved back (no data).
  AdamW on_meta(clone(a).groups(), options());
  berth::optim::load_optimizer_state(on_meta, dir.file("optimizer.pt"), c10::kMeta);
  EXPECT_EQ(berth::inspect_optimizer_state(on_meta).misplaced().size(), 6u);
  berth::testing::expect_contains(
      berth::testing::error_text<berth::PlacementError>([&] { berth::place_optimizer_state(on_meta); }),
      {"cannot move 6 state tensors from meta"});
}

}  // namespace
