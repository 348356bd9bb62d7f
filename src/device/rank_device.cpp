// Maps a rank to its device so that each process on a node gets a GPU of its own.
#include "berth/device/rank_device.h"

#include <string>

#include "berth/core/error.h"

namespace berth {
namespace {

std::string visible_phrase(const CudaInfo& cuda) {
  if (!cuda.visible_devices) return "CUDA_VISIBLE_DEVICES is unset";
  return "CUDA_VISIBLE_DEVICES=" + *cuda.visible_devices;
}

std::string who(const DistEnv& env) {
  std::string text =
      "local rank " + std::to_string(env.local_rank) + " of " + std::to_string(env.local_world_size);
  if (env.source != DistSource::None) text += ", from " + to_string(env.source) + " variables";
  return text;
}

}  // namespace

c10::Device device_for_rank(const DeviceRequest& request, const DistEnv& env, const CudaInfo& cuda,
                            const RankDeviceOptions& options) {
  using Kind = DeviceRequest::Kind;
  const bool cuda_usable = cuda.available && cuda.device_count > 0;
  if (request.kind == Kind::Cpu || request.kind == Kind::Meta) return resolve_device(request, cuda);
  if (request.kind == Kind::Auto && !cuda_usable) return c10::Device(c10::kCPU);

  if (request.kind == Kind::Cuda && request.index) {
    const c10::Device device = resolve_device(request, cuda);
    BERTH_CHECK(env.local_world_size <= 1 || options.allow_shared_device, "all ", env.local_world_size,
                " local ranks would use ", device_name(device), " (", who(env),
                "); berth runs one process per device. Fix: use --device auto (rank i -> cuda:i) or allow "
                "sharing explicitly with --allow-shared-device.");
    return device;
  }

  // "auto" with usable CUDA, or plain "cuda": resolve_device raises the CPU-only / no-GPU errors for the
  // latter.
  resolve_device(request, cuda);
  BERTH_CHECK(
      env.local_world_size <= cuda.device_count || options.allow_shared_device, env.local_world_size,
      " local ranks on this node but only ", cuda.device_count, " CUDA device",
      cuda.device_count == 1 ? " is" : "s are", " visible (", visible_phrase(cuda),
      "), so some ranks would share a GPU; berth runs one process per device. Fix: start at most ",
      cuda.device_count, " processes per node (e.g. torchrun --nproc-per-node ", cuda.device_count,
      "), make more GPUs visible, or allow sharing explicitly with --allow-shared-device (also the way ",
      "when the launcher already gives each rank its own GPU through CUDA_VISIBLE_DEVICES).");
  const int index = env.local_rank % cuda.device_count;
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace berth
