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

}  // namespace berth::compat
