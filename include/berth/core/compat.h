// The one place where libtorch 1.13 and 2.x differ for berth.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/string_utils.h>
#include <torch/version.h>

namespace c10d {
class ProcessGroup;
class Backend;
}  // namespace c10d

namespace berth::compat {

// The base of c10d's Gloo, NCCL and MPI process groups: c10d::ProcessGroup in 1.x, c10d::Backend in 2.x. Both
// have allreduce/broadcast/barrier/allgather returning c10::intrusive_ptr<c10d::Work>.
#if TORCH_VERSION_MAJOR < 2
using C10dBackend = c10d::ProcessGroup;
#else
using C10dBackend = c10d::Backend;
#endif

// torch::optim keys per-parameter state by the parameter's TensorImpl: as a string
// in 1.x, as the raw pointer in 2.x.
inline auto optimizer_state_key(const at::Tensor& param) {
#if TORCH_VERSION_MAJOR < 2
  return c10::guts::to_string(param.unsafeGetTensorImpl());
#else
  return static_cast<void*>(param.unsafeGetTensorImpl());
#endif
}

// Autocast's per-device switches: at::autocast::{is_cpu_enabled, set_cpu_enabled, get_autocast_cpu_dtype,
// ...} for the CPU and {is_enabled, set_enabled, get_autocast_gpu_dtype, ...} for CUDA before 2.4; from 2.4
// one set keyed by device type (is_autocast_enabled(device_type), ...). Defined in
// src/train/mixed_precision.cpp, which is the only place that includes ATen/autocast_mode.h. Device types
// other than CPU and CUDA throw.
bool autocast_enabled(c10::DeviceType device_type);
void set_autocast_enabled(c10::DeviceType device_type, bool enabled);
c10::ScalarType autocast_dtype(c10::DeviceType device_type);
void set_autocast_dtype(c10::DeviceType device_type, c10::ScalarType dtype);

}  // namespace berth::compat
