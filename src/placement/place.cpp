// Moves a module's tensors to one device in place, or explains which ones are elsewhere.
#include "berth/placement/place.h"

#include "berth/core/error.h"
#include "berth/device/device.h"
#include "core/text.h"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <sstream>

namespace berth {
namespace {

std::string group_lines(const std::vector<DeviceGroup>& groups) {
  std::string out;
  for (const DeviceGroup& group : groups) out += "\n  " + group.describe();
  return out;
}

// Replaces the data behind `tensor` with `moved` while keeping its TensorImpl, so every holder of
// the tensor (the module's members, an optimizer's param groups, optimizer state keyed by the
// TensorImpl) sees the new device.
void swap_in_place(const at::Tensor& tensor, const at::Tensor& moved) {
  torch::NoGradGuard no_grad;
  if (at::_has_compatible_shallow_copy_type(tensor, moved)) {
    // The supported route (what Module::to uses); it works between cpu and cuda.
    tensor.set_data(moved);
  } else {
    // set_data refuses tensors of different TensorImpl types, e.g. cpu <-> meta in libtorch 1.13
    // ("variable and tensor have incompatible tensor type"), which is why module->to(kMeta)
    // throws. Copying the metadata (sizes, strides, storage, dispatch keys) into the existing
    // TensorImpl does the same swap and keeps its autograd meta, hence requires_grad.
    tensor.unsafeGetTensorImpl()->shallow_copy_from(moved.getIntrusivePtr());
    // set_data also drops the cached grad accumulator, whose input metadata names the old device;
    // do the same so a graph built after the move accumulates on the new device.
    if (auto* meta = torch::autograd::impl::get_autograd_meta(tensor)) {
      std::lock_guard<std::mutex> lock(meta->mutex_);
      meta->grad_accumulator_.reset();
    }
  }
}

struct PendingMove {
  const NamedTensor* named;
  TensorInfo info;
  at::Tensor moved;       // the tensor's data on the target
  at::Tensor moved_grad;  // its grad on the target, when the grad must move
};

}  // namespace

std::string PlacementReport::summary() const {
  std::ostringstream out;
  out << "placement: ";
  const std::string where = device_name(target);
  if (total_tensors == 0) {
    out << "module has no parameters or buffers; nothing to place on " << where;
    return out.str();
  }
  if (!moved_anything()) {
    out << "all " << total_tensors << (total_tensors == 1 ? " tensor" : " tensors") << " already on "
        << where;
    return out.str();
  }
  out << "moved " << moved_tensors << (moved_tensors == 1 ? " tensor" : " tensors") << " ("
      << format_bytes(moved_bytes) << ") to " << where;
  for (std::size_t i = 0; i < moved_from.size(); ++i) {
    out << (i == 0 ? ": " : ", ") << moved_from[i].count << " from " << device_name(moved_from[i].device);
  }
  if (moved_grads > 0) {
    out << "; and " << moved_grads << (moved_grads == 1 ? " grad" : " grads") << " ("
        << format_bytes(moved_grad_bytes) << ")";
  }
  return out.str();
}

PlacementReport place(torch::nn::Module& module, c10::Device target, PlacementPolicy policy) {
  const std::vector<NamedTensor> tensors = module_tensors(module);
  const std::string where = device_name(target);

  PlacementReport report;
  report.target = target;
  report.policy = policy;

  std::vector<PendingMove> pending;
  std::vector<TensorInfo> elsewhere;
  std::vector<TensorInfo> from_meta;
  for (const NamedTensor& named : tensors) {
    TensorInfo info = describe_tensor(named);
    ++report.total_tensors;
    report.total_bytes += info.bytes;
    const bool tensor_elsewhere = info.device != target;
    const bool grad_elsewhere = info.grad_device && *info.grad_device != target;
    if (!tensor_elsewhere && !grad_elsewhere) continue;
    if (tensor_elsewhere) elsewhere.push_back(info);
    if ((tensor_elsewhere && info.device.is_meta()) || (grad_elsewhere && info.grad_device->is_meta())) {
      from_meta.push_back(info);
    }
    pending.push_back(PendingMove{&named, std::move(info), {}, {}});
  }

  if (policy == PlacementPolicy::Strict) {
    BERTH_CHECK_AS(PlacementError, elsewhere.empty(),
                   "model placement: expected every parameter and buffer on ", where, ", found ",
                   elsewhere.size(), " of ", report.total_tensors,
                   " elsewhere:", group_lines(group_by_device(elsewhere)), "\nFix: return the model on ",
                   where, " from model_init and let berth place it, or set placement=move.");
    return report;
  }

  BERTH_CHECK_AS(PlacementError, from_meta.empty() || target.is_meta(), "model placement: cannot move ",
                 from_meta.size(), from_meta.size() == 1 ? " tensor" : " tensors", " from meta to ", where,
                 ": meta tensors have a shape and dtype but no data, so these were never materialised:",
                 group_lines(group_by_device(from_meta)),
                 "\nFix: load the weights (torch::load, from_pretrained) or initialise the model on a real "
                 "device before berth places it. Nothing was moved.");

  // Copy everything first and swap afterwards: a failing copy (out of memory, a device that does
  // not exist) then leaves the module untouched instead of half moved.
  for (PendingMove& move : pending) {
    const at::Tensor& tensor = move.named->tensor;
    try {
      if (move.info.device != target) move.moved = tensor.to(target);
      if (move.info.grad_device && *move.info.grad_device != target)
        move.moved_grad = tensor.grad().to(target);
    } catch (const c10::Error& error) {
      BERTH_FAIL("model placement: copying ", move.info.name, " (", format_bytes(move.info.bytes), ") from ",
                 device_name(move.info.device), " to ", where,
                 " failed; nothing was moved. libtorch said: ", error.what_without_backtrace());
    }
  }

  std::vector<TensorInfo> moved;
  for (PendingMove& move : pending) {
    const at::Tensor& tensor = move.named->tensor;
    if (move.moved.defined()) {
      swap_in_place(tensor, move.moved);
      ++report.moved_tensors;
      report.moved_bytes += move.info.bytes;
      moved.push_back(move.info);
    }
    if (move.moved_grad.defined()) {
      // mutable_grad() skips the grad setter's device check, which would compare against the
      // parameter's old device when only the grad is elsewhere.
      tensor.mutable_grad() = move.moved_grad;
      ++report.moved_grads;
      report.moved_grad_bytes +=
          move.moved_grad.numel() * static_cast<int64_t>(move.moved_grad.element_size());
    }
  }
  report.moved_from = group_by_device(moved);
  return report;
}

std::optional<c10::Device> module_device(const torch::nn::Module& module) {
  const ModuleInspection inspection = inspect(module);
  if (inspection.groups.empty()) return std::nullopt;
  BERTH_CHECK_AS(PlacementError, inspection.groups.size() == 1, "model placement: the model's ",
                 inspection.tensors.size(), " parameters and buffers are spread over ",
                 inspection.groups.size(), " devices; expected one:", group_lines(inspection.groups),
                 "\nFix: berth::place(module, device, PlacementPolicy::Move) puts them all on one device, or "
                 "set placement=move.");
  return inspection.groups.front().device;
}

}  // namespace berth
