// Where every parameter and buffer of a module lives: per-tensor facts, a per-device summary, text for logs.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torch::nn {
class Module;
}

namespace berth {

enum class TensorKind { Parameter, Buffer };

// "parameter" or "buffer".
std::string_view to_string(TensorKind kind);

// A module's tensor together with its dotted name ("encoder.layer.0.weight").
struct NamedTensor {
  std::string name;
  TensorKind kind = TensorKind::Parameter;
  at::Tensor tensor;
};

// Every parameter and buffer of `module` and its submodules, in state_dict order (each module's
// parameters, then its buffers, then its children). A tensor registered under several names (tied
// weights) appears once, under its first name, so counts and bytes are not doubled. Undefined
// tensors (e.g. a Linear built without bias keeps none) are left out.
std::vector<NamedTensor> module_tensors(const torch::nn::Module& module);

// What berth reports about one tensor; holds no reference to the tensor itself.
struct TensorInfo {
  std::string name;
  TensorKind kind = TensorKind::Parameter;
  c10::Device device{c10::kCPU};
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<int64_t> shape;
  int64_t bytes = 0;  // numel * element size: what the tensor needs on its device (meta ones too)
  std::optional<c10::Device> grad_device;  // set when the tensor has a .grad

  bool has_grad() const { return grad_device.has_value(); }
};

TensorInfo describe_tensor(const NamedTensor& tensor);

// The tensors found on one device, in order of first appearance.
struct DeviceGroup {
  // How many names a group keeps for messages; the rest are only counted.
  static constexpr std::size_t kMaxNames = 3;

  c10::Device device{c10::kCPU};
  int64_t count = 0;
  int64_t bytes = 0;
  std::vector<std::string> first_names;  // at most kMaxNames

  // "meta: 2 tensors (96 B): fc2.weight, fc2.bias" ("..., and 7 more" past kMaxNames).
  std::string describe() const;
};

// Groups by device, groups ordered by the first tensor seen on each device.
std::vector<DeviceGroup> group_by_device(const std::vector<TensorInfo>& tensors);

struct ModuleInspection {
  std::vector<TensorInfo> tensors;  // module_tensors() order
  std::vector<DeviceGroup> groups;  // group_by_device(tensors)
  int64_t total_bytes = 0;

  // "module: 12 tensors, 1.2 MiB: cpu 10 (1.0 MiB), meta 2 (0.2 MiB)"; `label` replaces "module".
  std::string summary(std::string_view label = "module") const;
  // One row per tensor: name, kind, device, dtype, shape, bytes, grad device ("-" for none).
  std::string table() const;
};

ModuleInspection inspect(const torch::nn::Module& module);

// "96 B", "4.0 KiB", "1.2 MiB", "3.5 GiB": binary units, one decimal past bytes.
std::string format_bytes(int64_t bytes);
// "[2, 8]"; "[]" for a scalar.
std::string format_shape(c10::IntArrayRef shape);
// PyTorch's spelling: "float32", "bfloat16", "int64", "bool".
std::string dtype_name(c10::ScalarType dtype);

}  // namespace berth
