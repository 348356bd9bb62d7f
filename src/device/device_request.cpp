// Parsing device requests: the spelling checks, torch-free (device.cpp resolves a request against CUDA).
#include "berth/device/device_request.h"

#include "berth/core/error.h"
#include "core/text.h"

namespace berth {
namespace {

constexpr const char* kAcceptedForms = "auto, cpu, cuda, cuda:N (N = 0, 1, ...), meta";

[[noreturn]] void invalid_device(std::string_view original, const std::string& lowered) {
  std::string hint;
  if (lowered == "gpu" || lowered.rfind("gpu:", 0) == 0) hint = " (did you mean 'cuda'?)";
  BERTH_FAIL("invalid device '", original, "': expected one of ", kAcceptedForms, hint);
}

}  // namespace

DeviceRequest parse_device(std::string_view text) {
  const std::string_view trimmed = text::trim(text);
  const std::string key = text::to_lower(trimmed);
  DeviceRequest request;
  request.text = std::string(trimmed);
  if (key == "auto") {
    request.kind = DeviceRequest::Kind::Auto;
  } else if (key == "cpu" || key == "cpu:0") {  // "cpu:0" is what torch itself prints for the CPU
    request.kind = DeviceRequest::Kind::Cpu;
  } else if (key == "meta") {
    request.kind = DeviceRequest::Kind::Meta;
  } else if (key == "cuda") {
    request.kind = DeviceRequest::Kind::Cuda;
  } else if (key.rfind("cuda:", 0) == 0) {
    const std::optional<int> index = text::parse_digits(std::string_view(key).substr(5));
    if (!index) invalid_device(trimmed, key);
    request.kind = DeviceRequest::Kind::Cuda;
    request.index = index;
  } else {
    invalid_device(trimmed, key);
  }
  return request;
}

}  // namespace berth
