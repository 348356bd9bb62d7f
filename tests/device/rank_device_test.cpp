// Tests the rank -> device mapping on fake GPU machines: one GPU per local rank, sharing only when allowed.
#include "berth/device/rank_device.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "berth/core/error.h"
#include "support/test_support.h"

namespace berth {
namespace {

using testing::error_text;
using testing::expect_contains;

CudaInfo visible_gpus(int count) {
  CudaInfo info;
  info.compiled = true;
  info.available = count > 0;
  info.device_count = count;
  return info;
}

DistEnv local(int local_rank, int local_world_size) {
  DistEnv env;
  env.rank = local_rank;
  env.world_size = local_world_size;
  env.local_rank = local_rank;
  env.local_world_size = local_world_size;
  env.source = DistSource::Torchrun;
  return env;
}

TEST(RankDevice, AutoWithoutCudaIsCpu) {
  EXPECT_EQ(device_for_rank(parse_device("auto"), local(1, 2), CudaInfo{}), c10::Device(c10::kCPU));
  EXPECT_EQ(device_for_rank(parse_device("auto"), local(0, 1), visible_gpus(0)), c10::Device(c10::kCPU));
}

TEST(RankDevice, AutoGivesEachLocalRankItsGpu) {
  const CudaInfo cuda = visible_gpus(2);
  EXPECT_EQ(device_for_rank(parse_device("auto"), local(0, 2), cuda), c10::Device(c10::kCUDA, 0));
  EXPECT_EQ(device_for_rank(parse_device("auto"), local(1, 2), cuda), c10::Device(c10::kCUDA, 1));
  EXPECT_EQ(device_for_rank(parse_device("cuda"), local(1, 2), cuda), c10::Device(c10::kCUDA, 1));
}

TEST(RankDevice, LocalRankNotGlobalRankPicksTheGpu) {
  DistEnv env = local(1, 2);
  env.rank = 6;
  env.world_size = 8;
  EXPECT_EQ(device_for_rank(parse_device("auto"), env, visible_gpus(2)), c10::Device(c10::kCUDA, 1));
}

TEST(RankDevice, MoreLocalRanksThanGpusNeedsPermission) {
  const CudaInfo cuda = visible_gpus(2);
  expect_contains(error_text([&] { device_for_rank(parse_device("auto"), local(2, 3), cuda); }),
                  {"3 local ranks on this node but only 2 CUDA devices are visible",
                   "CUDA_VISIBLE_DEVICES is unset", "--nproc-per-node 2", "--allow-shared-device"});
  expect_contains(error_text([&] { device_for_rank(parse_device("cuda"), local(0, 3), cuda); }),
                  {"3 local ranks", "only 2 CUDA devices"});

  RankDeviceOptions shared;
  shared.allow_shared_device = true;
  EXPECT_EQ(device_for_rank(parse_device("auto"), local(2, 3), cuda, shared), c10::Device(c10::kCUDA, 0));
}

TEST(RankDevice, FixedGpuForSeveralLocalRanksNeedsPermission) {
  const CudaInfo cuda = visible_gpus(2);
  expect_contains(
      error_text([&] { device_for_rank(parse_device("cuda:1"), local(0, 2), cuda); }),
      {"all 2 local ranks would use cuda:1", "berth runs one process per device",
       "Fix: use --device auto (rank i -> cuda:i) or allow sharing explicitly with --allow-shared-device"});

  RankDeviceOptions shared;
  shared.allow_shared_device = true;
  EXPECT_EQ(device_for_rank(parse_device("cuda:1"), local(0, 2), cuda, shared), c10::Device(c10::kCUDA, 1));
  EXPECT_EQ(device_for_rank(parse_device("cuda:1"), local(0, 1), cuda), c10::Device(c10::kCUDA, 1));
}

TEST(RankDevice, ExplicitDevicesStillChecked) {
  expect_contains(error_text([] { device_for_rank(parse_device("cuda:2"), local(0, 1), visible_gpus(2)); }),
                  {"device 'cuda:2' requested", "only 2 CUDA devices are visible"});
  expect_contains(error_text([] { device_for_rank(parse_device("cuda"), local(0, 1), CudaInfo{}); }),
                  {"built without CUDA"});
  expect_contains(error_text([] { device_for_rank(parse_device("cuda"), local(0, 1), visible_gpus(0)); }),
                  {"no CUDA device is visible"});
}

TEST(RankDevice, CpuAndMetaAsGivenForAnyRank) {
  EXPECT_EQ(device_for_rank(parse_device("cpu"), local(3, 4), visible_gpus(2)), c10::Device(c10::kCPU));
  EXPECT_EQ(device_for_rank(parse_device("meta"), local(3, 4), visible_gpus(2)), c10::Device(c10::kMeta));
}

}  // namespace
}  // namespace berth
