// Parsing device requests, querying what CUDA this process sees, and the errors when the two disagree.
#include "berth/device/device.h"

#include <torch/cuda.h>

#include <cctype>
#include <cstdlib>
#include <limits>

#include "berth/config.h"
#include "berth/core/error.h"
#include "core/text.h"

#if BERTH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace berth {
namespace {

std::string requested_name(const DeviceRequest& request) {
  if (!request.text.empty()) return request.text;
  switch (request.kind) {
    case DeviceRequest::Kind::Auto:
      return "auto";
    case DeviceRequest::Kind::Cpu:
      return "cpu";
    case DeviceRequest::Kind::Meta:
      return "meta";
    case DeviceRequest::Kind::Cuda:
      return request.index ? "cuda:" + std::to_string(*request.index) : "cuda";
  }
  return "?";
}

// Every CUDA error names CUDA_VISIBLE_DEVICES, because it silently changes both the count and the numbering.
std::string visible_phrase(const CudaInfo& cuda) {
  if (!cuda.visible_devices) return "CUDA_VISIBLE_DEVICES is unset";
  if (text::trim(*cuda.visible_devices).empty()) return "CUDA_VISIBLE_DEVICES=\"\" hides every GPU";
  return "CUDA_VISIBLE_DEVICES=" + *cuda.visible_devices;
}

std::string device_list(int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += (i ? ", cuda:" : "cuda:") + std::to_string(i);
  return out;
}

std::optional<std::string> getenv_opt(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace

CudaInfo query_cuda() {
  CudaInfo info;
  info.device_count = static_cast<int>(torch::cuda::device_count());
  info.available = info.device_count > 0;
  // A CUDA libtorch without a driver reports no devices, so the build flag is the better witness.
  info.compiled = BERTH_WITH_CUDA || info.available;
#if BERTH_WITH_CUDA
  for (int i = 0; i < info.device_count; ++i) {
    const cudaDeviceProp* prop = at::cuda::getDeviceProperties(i);
    info.devices.push_back(
        CudaDeviceInfo{i, prop->name, static_cast<int64_t>(prop->totalGlobalMem), prop->major, prop->minor});
  }
#endif
  info.visible_devices = getenv_opt("CUDA_VISIBLE_DEVICES");
  info.device_order = getenv_opt("CUDA_DEVICE_ORDER");
  return info;
}

c10::Device resolve_device(const DeviceRequest& request, const CudaInfo& cuda) {
  switch (request.kind) {
    case DeviceRequest::Kind::Cpu:
      return c10::Device(c10::kCPU);
    case DeviceRequest::Kind::Meta:
      return c10::Device(c10::kMeta);
    case DeviceRequest::Kind::Auto:
      if (cuda.available && cuda.device_count > 0) return c10::Device(c10::kCUDA, 0);
      return c10::Device(c10::kCPU);
    case DeviceRequest::Kind::Cuda:
      break;
  }
  const std::string asked = requested_name(request);
  BERTH_CHECK(cuda.compiled, "device '", asked,
              "' requested, but this libtorch was built without CUDA (CPU only); ", visible_phrase(cuda),
              ". Fix: use --device cpu (or auto), or build berth against a CUDA libtorch (-DTorch_DIR=...).");
  if (cuda.device_count <= 0) {
    if (cuda.visible_devices && text::trim(*cuda.visible_devices).empty()) {
      BERTH_FAIL("device '", asked, "' requested, but no CUDA device is visible: ", visible_phrase(cuda),
                 ". Fix: unset CUDA_VISIBLE_DEVICES or list the GPUs to use (e.g. CUDA_VISIBLE_DEVICES=0,1), "
                 "or use --device cpu.");
    }
    BERTH_FAIL(
        "device '", asked,
        "' requested, but no CUDA device is visible: this libtorch has CUDA, but the CUDA runtime found "
        "no usable GPU (NVIDIA driver missing or not loaded, or no GPU in this machine); ",
        visible_phrase(cuda),
        ". Fix: check that nvidia-smi lists a GPU, make one visible through CUDA_VISIBLE_DEVICES, or "
        "use --device cpu.");
  }
  const int index = request.index.value_or(0);
  if (index >= cuda.device_count) {
    const bool one = cuda.device_count == 1;
    std::string renumber;
    std::string fix_visible;
    if (cuda.visible_devices) {
      renumber = " renumbers the visible GPUs from 0";
      fix_visible = ", or change CUDA_VISIBLE_DEVICES";
    }
    BERTH_FAIL("device '", asked, "' requested, but only ", cuda.device_count,
               one ? " CUDA device is visible (" : " CUDA devices are visible (",
               device_list(cuda.device_count), "); ", visible_phrase(cuda), renumber, ". Fix: use ",
               one ? std::string("cuda:0") : "cuda:0..cuda:" + std::to_string(cuda.device_count - 1),
               fix_visible, ".");
  }
  BERTH_BUG(index <= std::numeric_limits<c10::DeviceIndex>::max(), "cuda index ", index);
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string device_order_advice(const CudaInfo& cuda) {
  std::string text =
      "CUDA numbers GPUs fastest first by default (CUDA_DEVICE_ORDER=FASTEST_FIRST), while nvidia-smi lists "
      "them in PCI bus order, so on a machine with different GPU models cuda:0 may not be nvidia-smi's GPU "
      "0. "
      "Set CUDA_DEVICE_ORDER=PCI_BUS_ID to make the two agree. ";
  if (!cuda.device_order) {
    text += "CUDA_DEVICE_ORDER is unset here, so CUDA uses FASTEST_FIRST.";
  } else if (*cuda.device_order == "PCI_BUS_ID") {
    text += "CUDA_DEVICE_ORDER=PCI_BUS_ID here, so cuda:N follows nvidia-smi's order.";
  } else if (*cuda.device_order == "FASTEST_FIRST") {
    text += "CUDA_DEVICE_ORDER=FASTEST_FIRST here (the default order).";
  } else {
    text += "CUDA_DEVICE_ORDER=" + *cuda.device_order +
            " here, which is not a value CUDA knows (FASTEST_FIRST or PCI_BUS_ID).";
  }
  if (cuda.visible_devices && !text::trim(*cuda.visible_devices).empty()) {
    text += " " + visible_phrase(cuda) + " also renumbers: cuda:0 is the first GPU it lists.";
  }
  return text;
}

std::string device_name(const c10::Device& device) { return device.str(); }

}  // namespace berth
