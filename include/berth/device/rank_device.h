// The device a rank uses: one process per device, chosen from its local rank.
#pragma once

#include <c10/core/Device.h>

#include "berth/device/device.h"
#include "berth/device/dist_env.h"

namespace berth {

struct RankDeviceOptions {
  // Lets several local ranks share one GPU (tests on a single-GPU machine); off by
  // default because it silently halves each rank's memory and speed.
  bool allow_shared_device = false;
};

// "auto" -> cuda:(local_rank % visible count) when CUDA is usable, else cpu.
// "cuda" -> the same mapping, but CUDA must be usable. "cuda:N" and "cpu" are taken
// as given after resolve_device's existence check. More local ranks than visible
// GPUs (two ranks on one GPU) throws berth::Error unless allow_shared_device.
c10::Device device_for_rank(const DeviceRequest& request, const DistEnv& env, const CudaInfo& cuda,
                            const RankDeviceOptions& options = {});

}  // namespace berth
