// Walks a module's parameters and buffers and describes where each one lives.
#include "berth/placement/inspect.h"

#include "berth/core/error.h"
#include "berth/device/device.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <unordered_set>

namespace berth {
namespace {

void collect(const torch::nn::Module& module, const std::string& prefix,
             std::unordered_set<const c10::TensorImpl*>& seen, std::vector<NamedTensor>& out) {
  auto add = [&](const std::string& name, const at::Tensor& tensor, TensorKind kind) {
    if (!tensor.defined()) return;
    if (!seen.insert(tensor.unsafeGetTensorImpl()).second) return;
    out.push_back(NamedTensor{prefix + name, kind, tensor});
  };
  for (const auto& item : module.named_parameters(/*recurse=*/false)) {
    add(item.key(), item.value(), TensorKind::Parameter);
  }
  for (const auto& item : module.named_buffers(/*recurse=*/false)) {
    add(item.key(), item.value(), TensorKind::Buffer);
  }
  // named_children() rather than named_modules(): the latter needs the root to be owned by a
  // shared_ptr, which a module on the stack or behind a plain reference is not.
  for (const auto& child : module.named_children()) {
    collect(*child.value(), prefix + child.key() + ".", seen, out);
  }
}

std::string pad(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

}  // namespace

std::string_view to_string(TensorKind kind) {
  switch (kind) {
    case TensorKind::Parameter:
      return "parameter";
    case TensorKind::Buffer:
      return "buffer";
  }
  BERTH_BUG(false, "unknown TensorKind ", static_cast<int>(kind));
}

std::vector<NamedTensor> module_tensors(const torch::nn::Module& module) {
  std::vector<NamedTensor> out;
  std::unordered_set<const c10::TensorImpl*> seen;
  collect(module, "", seen, out);
  return out;
}

TensorInfo describe_tensor(const NamedTensor& named) {
  const at::Tensor& tensor = named.tensor;
  BERTH_BUG(tensor.defined(), "describe_tensor(", named.name, ") on an undefined tensor");
  TensorInfo info;
  info.name = named.name;
  info.kind = named.kind;
  info.device = tensor.device();
  info.dtype = tensor.scalar_type();
  info.shape = tensor.sizes().vec();
  // Not nbytes(): meta tensors have no storage, yet their size is what they will need once real.
  info.bytes = tensor.numel() * static_cast<int64_t>(tensor.element_size());
  const at::Tensor& grad = tensor.grad();
  if (grad.defined()) info.grad_device = grad.device();
  return info;
}

std::string DeviceGroup::describe() const {
  std::ostringstream out;
  out << device_name(device) << ": " << count << (count == 1 ? " tensor" : " tensors") << " ("
      << format_bytes(bytes) << ")";
  for (std::size_t i = 0; i < first_names.size(); ++i) out << (i == 0 ? ": " : ", ") << first_names[i];
  const int64_t rest = count - static_cast<int64_t>(first_names.size());
  if (rest > 0) out << ", and " << rest << " more";
  return out.str();
}

std::vector<DeviceGroup> group_by_device(const std::vector<TensorInfo>& tensors) {
  std::vector<DeviceGroup> groups;
  for (const TensorInfo& info : tensors) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const DeviceGroup& group) { return group.device == info.device; });
    if (it == groups.end()) {
      groups.push_back(DeviceGroup{});
      it = std::prev(groups.end());
      it->device = info.device;
    }
    ++it->count;
    it->bytes += info.bytes;
    if (it->first_names.size() < DeviceGroup::kMaxNames) it->first_names.push_back(info.name);
  }
  return groups;
}

ModuleInspection inspect(const torch::nn::Module& module) {
  ModuleInspection result;
  for (const NamedTensor& named : module_tensors(module)) {
    result.tensors.push_back(describe_tensor(named));
    result.total_bytes += result.tensors.back().bytes;
  }
  result.groups = group_by_device(result.tensors);
  return result;
}

std::string ModuleInspection::summary(std::string_view label) const {
  std::ostringstream out;
  out << label << ": ";
  if (tensors.empty()) {
    out << "no parameters or buffers";
    return out.str();
  }
  out << tensors.size() << (tensors.size() == 1 ? " tensor, " : " tensors, ") << format_bytes(total_bytes);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    out << (i == 0 ? ": " : ", ") << device_name(groups[i].device) << " " << groups[i].count << " ("
        << format_bytes(groups[i].bytes) << ")";
  }
  return out.str();
}

std::string ModuleInspection::table() const {
  const std::vector<std::string> header = {"name", "kind", "device", "dtype", "shape", "bytes", "grad"};
  std::vector<std::vector<std::string>> rows;
  rows.reserve(tensors.size());
  for (const TensorInfo& info : tensors) {
    rows.push_back({info.name, std::string(to_string(info.kind)), device_name(info.device),
                    dtype_name(info.dtype), format_shape(info.shape), format_bytes(info.bytes),
                    info.grad_device ? device_name(*info.grad_device) : "-"});
  }
  std::vector<std::size_t> widths(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    widths[c] = header[c].size();
    for (const auto& row : rows) widths[c] = std::max(widths[c], row[c].size());
  }
  std::ostringstream out;
  auto write_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += c + 1 == row.size() ? row[c] : pad(row[c], widths[c] + 2);
    }
    out << line << '\n';
  };
  write_row(header);
  for (const auto& row : rows) write_row(row);
  return out.str();
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  // Switch units before printf would round 1023.96 KiB up to "1024.0 KiB".
  while (value >= 1023.95 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string format_shape(c10::IntArrayRef shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float:
      return "float32";
    case c10::ScalarType::Double:
      return "float64";
    case c10::ScalarType::Half:
      return "float16";
    case c10::ScalarType::BFloat16:
      return "bfloat16";
    case c10::ScalarType::Long:
      return "int64";
    case c10::ScalarType::Int:
      return "int32";
    case c10::ScalarType::Short:
      return "int16";
    case c10::ScalarType::Char:
      return "int8";
    case c10::ScalarType::Byte:
      return "uint8";
    case c10::ScalarType::Bool:
      return "bool";
    case c10::ScalarType::ComplexFloat:
      return "complex64";
    case c10::ScalarType::ComplexDouble:
      return "complex128";
    default:
      return c10::toString(dtype);
  }
}

}  // namespace berth
