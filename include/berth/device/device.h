// Device requests ("auto", "cpu", "cuda", "cuda:N", "meta"), what CUDA this process sees, and checking one
// against the other.
#pragma once

#include <c10/core/Device.h>

#include "berth/device/device_request.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int64_t total_memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

// What this process can see of CUDA right now.
struct CudaInfo {
  bool compiled = false;   // libtorch built with CUDA
  bool available = false;  // a driver and at least one visible device
  int device_count = 0;
  std::vector<CudaDeviceInfo> devices;
  std::optional<std::string> visible_devices;  // CUDA_VISIBLE_DEVICES, if set
  std::optional<std::string> device_order;     // CUDA_DEVICE_ORDER, if set
};

// Queries libtorch (and the CUDA runtime, in CUDA builds) and the environment.
CudaInfo query_cuda();

// Checks that a concrete request exists here: "cuda:3" with 2 visible GPUs, or any
// "cuda" on a CPU-only build, throws berth::Error naming what exists,
// CUDA_VISIBLE_DEVICES and the fix. "auto" resolves to cuda:0 when CUDA is usable,
// else cpu; "cuda" resolves to cuda:0.
c10::Device resolve_device(const DeviceRequest& request, const CudaInfo& cuda);

// The CUDA_DEVICE_ORDER explanation doctor prints: FASTEST_FIRST (CUDA's default) vs
// PCI_BUS_ID (nvidia-smi's order), and what to set so both agree.
std::string device_order_advice(const CudaInfo& cuda);

// "cpu", "cuda:1", "meta": the spelling berth uses in every message.
std::string device_name(const c10::Device& device);

}  // namespace berth
