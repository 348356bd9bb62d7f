// The one place for what differs between the torch 2.x versions berth builds on (2.4 and later: the pinned
// 2.15, a GPU machine's 2.11), and for torch internals berth reaches through a stable name.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

#include <utility>

namespace c10d {
class Backend;
}  // namespace c10d

namespace berth::compat {

// The base of c10d's Gloo, NCCL and MPI process groups (allreduce/broadcast/barrier/allgather returning
// c10::intrusive_ptr<c10d::Work>).
using C10dBackend = c10d::Backend;

// The handle autograd holds its graph nodes by (a parameter's gradient accumulator, say): std::shared_ptr in
// the torch of a GPU machine here (2.11), c10::intrusive_ptr in the pinned 2.15.
using AutogradNodePtr = decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

// torch::optim keys per-parameter state by the parameter's TensorImpl pointer.
inline void* optimizer_state_key(const at::Tensor& param) { return param.unsafeGetTensorImpl(); }

// Autocast's switches, keyed by device type (at::autocast::is_autocast_enabled(device_type), ...). Defined in
// src/train/mixed_precision.cpp, the only place that includes ATen/autocast_mode.h, so no header pays for it.
// Device types other than CPU and CUDA throw.
bool autocast_enabled(c10::DeviceType device_type);
void set_autocast_enabled(c10::DeviceType device_type, bool enabled);
c10::ScalarType autocast_dtype(c10::DeviceType device_type);
void set_autocast_dtype(c10::DeviceType device_type, c10::ScalarType dtype);

}  // namespace berth::compat
