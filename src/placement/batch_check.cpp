// Batch and single-tensor placement checks against the model's device.
#include "berth/placement/batch_check.h"

#include "berth/core/error.h"
#include "berth/device/device.h"

#include <torch/torch.h>

#include <sstream>
#include <vector>

namespace berth {
namespace {

std::string field_line(const std::string& name, const at::Tensor& tensor) {
  return detail::concat("\n  ", name, ": ", device_name(tensor.device()), ", shape ",
                        format_shape(tensor.sizes()), ", ", dtype_name(tensor.scalar_type()));
}

}  // namespace

void check_batch(const Batch& batch, c10::Device model_device) {
  const std::string where = device_name(model_device);
  std::string lines;
  std::size_t misplaced = 0;
  std::size_t defined = 0;
  for (const auto& [name, tensor] : batch) {
    if (!tensor.defined()) continue;
    ++defined;
    if (tensor.device() == model_device) continue;
    ++misplaced;
    lines += field_line(name, tensor);
  }
  BERTH_CHECK_AS(PlacementError, misplaced == 0, "batch placement: expected every batch tensor on ", where,
                 " (the model's device), found ", misplaced, " of ", defined, " elsewhere:", lines,
                 "\nFix: move the batch with berth::place_batch(batch, ", where,
                 ") or let the Trainer's loader do it.");
}

Batch place_batch(const Batch& batch, c10::Device device, PlacementPolicy policy) {
  if (policy == PlacementPolicy::Strict) {
    check_batch(batch, device);
    return batch;
  }
  const std::string where = device_name(device);
  std::string meta_lines;
  for (const auto& [name, tensor] : batch) {
    if (tensor.defined() && tensor.is_meta() && !device.is_meta()) meta_lines += field_line(name, tensor);
  }
  BERTH_CHECK_AS(
      PlacementError, meta_lines.empty(), "batch placement: cannot move meta tensors to ", where,
      ": meta tensors have a shape and dtype but no data:", meta_lines,
      "\nFix: build the batch from real data (the loader's tensors) rather than on the meta device.");
  Batch out;
  for (const auto& [name, tensor] : batch) {
    // to() returns the tensor itself when it is already on `device`, so nothing is copied.
    out.emplace(name, tensor.defined() ? tensor.to(device) : tensor);
  }
  return out;
}

void check_tensor_on(const at::Tensor& tensor, std::string_view what, c10::Device device) {
  const std::string where = device_name(device);
  BERTH_CHECK(tensor.defined(), what, " is an undefined tensor; expected a tensor on ", where,
              " (the model's device). Fix: make sure it is computed before it is used.");
  BERTH_CHECK_AS(PlacementError, tensor.device() == device, what, " is on ", device_name(tensor.device()),
                 " but the model is on ", where, " (", what, ": shape ", format_shape(tensor.sizes()), ", ",
                 dtype_name(tensor.scalar_type()), "). Fix: compute it from tensors on ", where,
                 ": move the batch with berth::place_batch(batch, ", where, ") or the tensor with .to(",
                 where, ").");
}

}  // namespace berth
