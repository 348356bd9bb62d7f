// RNG state: capture/restore replays the same draws, parity with PyTorch's generator, the file round trip.
#include "berth/train/rng_state.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/io/safetensors.h"
#include "support/test_support.h"

using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;

namespace berth::train {
namespace {

nlohmann::json rng_state_golden_cases() {
  std::ifstream in(berth::testing::golden_dir() + "/train_io/rng_state.json");
  EXPECT_TRUE(in.good()) << "missing golden; build the berth_goldens target";
  return in.good() ? nlohmann::json::parse(in)["cases"] : nlohmann::json::array();
}

TEST(RngState, RestoringReplaysTheSameDraws) {
  torch::manual_seed(7);
  torch::randn({3});
  const RngState state = capture_rng_state();
  const at::Tensor first = torch::randn({64});
  const at::Tensor dropout_first = torch::dropout(torch::ones({64}), 0.5, /*train=*/true);
  restore_rng_state(state);
  EXPECT_TRUE(torch::equal(torch::randn({64}), first));
  EXPECT_TRUE(torch::equal(torch::dropout(torch::ones({64}), 0.5, true), dropout_first));
  // And the stream really moves: without the restore the next draws differ.
  EXPECT_FALSE(torch::equal(torch::randn({64}), first));
}

// The state bytes after torch.manual_seed are PyTorch's, and a state PyTorch took mid-stream, restored here,
// gives the values PyTorch drew next (tests/goldens/train_io_goldens.py).
TEST(RngState, MatchesPyTorchsGenerator) {
  const auto cases = rng_state_golden_cases();
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) {
    torch::manual_seed(c["seed"].get<uint64_t>());
    EXPECT_EQ(capture_rng_state().cpu, c["seeded_state"].get<std::vector<uint8_t>>()) << "seed " << c["seed"];
    torch::manual_seed(999);  // somewhere else entirely
    RngState mid;
    mid.cpu = c["mid_state"].get<std::vector<uint8_t>>();
    restore_rng_state(mid);
    const at::Tensor drawn = torch::randn({6}, torch::kFloat64);
    const auto expected = c["randn_after_mid"].get<std::vector<double>>();
    ASSERT_EQ(drawn.numel(), static_cast<int64_t>(expected.size()));
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(drawn[static_cast<int64_t>(i)].item<double>(), expected[i])
          << "seed " << c["seed"] << " i " << i;
  }
}

TEST(RngState, FileRoundTrip) {
  TempDir dir;
  torch::manual_seed(3);
  RngState state = capture_rng_state();
  state.cuda = {{1, 2, 3}, {4, 5}};  // the file holds whatever devices were there, CUDA or not here
  save_rng_state(state, dir.file("rng_state.safetensors"));
  const RngState loaded = load_rng_state(dir.file("rng_state.safetensors"));
  EXPECT_EQ(loaded.cpu, state.cpu);
  EXPECT_EQ(loaded.cuda, state.cuda);
  const auto file = io::SafetensorsFile::open(dir.file("rng_state.safetensors"));
  EXPECT_EQ(file.names(), (std::vector<std::string>{"cpu", "cuda.0", "cuda.1"}));
  EXPECT_EQ(file.metadata().at("format"), "berth-rng-state");
}

TEST(RngState, CudaStatesWithoutTheDevicesAreNoted) {
  if (torch::cuda::device_count() > 0) GTEST_SKIP() << "this test needs a machine without CUDA";
  torch::manual_seed(5);
  RngState state = capture_rng_state();
  EXPECT_TRUE(state.cuda.empty());
  std::string note = "stale";
  restore_rng_state(state, &note);
  EXPECT_EQ(note, "");
  state.cuda = {{1, 2, 3}};
  restore_rng_state(state, &note);
  expect_contains(note, {"1 CUDA generator(s)", "0 CUDA device(s)", "restored 0", "not draw exactly"});
}

TEST(RngState, AWrongFileIsNamedWithTheFix) {
  TempDir dir;
  io::save_safetensors(dir.file("model.safetensors"), {{"weight", torch::zeros({2})}});
  expect_contains(error_text([&] { load_rng_state(dir.file("model.safetensors")); }),
                  {dir.file("model.safetensors"), "expected an RNG state file", "tensors weight",
                   "Fix: pass the rng_state.safetensors"});
  io::save_safetensors(dir.file("float.safetensors"), {{"cpu", torch::zeros({2})}});
  expect_contains(error_text([&] { load_rng_state(dir.file("float.safetensors")); }),
                  {"\"cpu\" to be a 1-D uint8 tensor", "Float"});
  EXPECT_FALSE(error_text([&] { load_rng_state(dir.file("missing.safetensors")); }).empty());
}

TEST(RngState, AStateFromElsewhereIsRefusedWithTheFix) {
  RngState state;
  state.cpu = {1, 2, 3};
  expect_contains(error_text([&] { restore_rng_state(state); }),
                  {"restoring the CPU random generator", "found 3 bytes", "Fix:"});
  expect_contains(error_text([&] { restore_rng_state(RngState{}); }), {"found none"});
}

}  // namespace
}  // namespace berth::train
