// Putting a module's parameters, grads and buffers on one device, or proving they already are.
#pragma once

#include "berth/placement/inspect.h"
#include "berth/placement/placement_policy.h"

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torch::nn {
class Module;
}

namespace berth {

// What place() did, for the log.
struct PlacementReport {
  c10::Device target{c10::kCPU};
  PlacementPolicy policy = PlacementPolicy::Move;
  int64_t total_tensors = 0;  // parameters and buffers seen
  int64_t total_bytes = 0;
  int64_t moved_tensors = 0;  // parameters and buffers moved; their grads are counted apart
  int64_t moved_bytes = 0;
  int64_t moved_grads = 0;
  int64_t moved_grad_bytes = 0;
  std::vector<DeviceGroup> moved_from;  // the moved parameters and buffers, by the device they left

  bool moved_anything() const { return moved_tensors > 0 || moved_grads > 0; }
  // "placement: moved 8 tensors (4.1 MiB) to cpu: 8 from meta" or
  // "placement: all 12 tensors already on cpu".
  std::string summary() const;
};

// Move: every parameter, its .grad and every buffer is moved to `target` in place, so handles the
// module keeps (LinearImpl::weight) and an optimizer built on its parameters stay valid. Nothing
// is moved when any tensor would have to leave the meta device (meta tensors hold no data); that
// throws PlacementError naming them.
// Strict: nothing is moved; any parameter or buffer elsewhere throws PlacementError naming the
// expected device, the offenders by device, and the fix.
PlacementReport place(torch::nn::Module& module, c10::Device target,
                      PlacementPolicy policy = PlacementPolicy::Move);

// The one device holding all of the module's parameters and buffers; std::nullopt for a module
// without any (it can run anywhere, so no device is implied). Throws PlacementError listing the
// devices when they are mixed.
std::optional<c10::Device> module_device(const torch::nn::Module& module);

}  // namespace berth
