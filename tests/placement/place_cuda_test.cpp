// Placement between cpu and a real GPU: skipped without CUDA, run by tests/gpu/run.sh on GPU machines.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "berth/core/error.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/optimizer_state.h"
#include "berth/placement/place.h"

namespace {

bool has_cuda() { return torch::cuda::is_available() && torch::cuda::device_count() > 0; }

TEST(PlaceCuda, ModelMovesFromCpuToTheGpuAndTrains) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA device";
  const c10::Device gpu(c10::kCUDA, 0);
  torch::nn::Linear model(8, 2);
  auto report = berth::place(*model, gpu, berth::PlacementPolicy::Move);
  EXPECT_EQ(report.moved_tensors, 2);
  EXPECT_EQ(report.moved_bytes, (8 * 2 + 2) * 4);
  EXPECT_TRUE(model->weight.is_cuda());
  auto loss = model(torch::randn({4, 8}, gpu)).sum();
  loss.backward();
  EXPECT_TRUE(model->weight.grad().is_cuda());
}

TEST(PlaceCuda, StrictNamesTheGpuAndTheCpuTensors) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA device";
  torch::nn::Linear model(8, 2);
  try {
    berth::place(*model, c10::Device(c10::kCUDA, 0), berth::PlacementPolicy::Strict);
    FAIL() << "expected PlacementError";
  } catch (const berth::PlacementError& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("expected every parameter and buffer on cuda:0"), std::string::npos) << text;
    EXPECT_NE(text.find("cpu: 2 tensors"), std::string::npos) << text;
  }
}

TEST(PlaceCuda, BatchOnCpuForAGpuModelIsReportedThenMoved) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA device";
  const c10::Device gpu(c10::kCUDA, 0);
  berth::Batch batch{{"input_ids", torch::zeros({2, 4}, torch::kLong)},
                     {"labels", torch::zeros({2}, torch::kLong)}};
  EXPECT_THROW(berth::check_batch(batch, gpu), berth::PlacementError);
  auto moved = berth::place_batch(batch, gpu, berth::PlacementPolicy::Move);
  EXPECT_NO_THROW(berth::check_batch(moved, gpu));
}

TEST(PlaceCuda, OptimizerStateLeftOnCpuAfterResumeFollowsItsParameter) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA device";
  torch::nn::Linear model(8, 2);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3));
  model(torch::randn({4, 8})).sum().backward();
  optimizer.step();  // state now exists, on cpu
  berth::place(*model, c10::Device(c10::kCUDA, 0), berth::PlacementPolicy::Move);
  EXPECT_THROW(berth::check_optimizer_state(optimizer, model.get()), berth::PlacementError);
  auto report = berth::place_optimizer_state(optimizer, berth::PlacementPolicy::Move, model.get());
  EXPECT_EQ(report.moved_tensors, 4);  // exp_avg and exp_avg_sq of weight and bias
  EXPECT_NO_THROW(berth::check_optimizer_state(optimizer, model.get()));
  optimizer.zero_grad();
  model(torch::randn({4, 8}, c10::Device(c10::kCUDA, 0))).sum().backward();
  EXPECT_NO_THROW(optimizer.step());
}

}  // namespace
