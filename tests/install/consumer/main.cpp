// Uses the installed berth headers and library: parses a device and places a module on it.
#include <torch/torch.h>

#include <berth/core/error.h>
#include <berth/device/device.h>
#include <berth/placement/place.h>

#include <iostream>

int main() {
  auto cuda = berth::query_cuda();
  c10::Device device = berth::resolve_device(berth::parse_device("cpu"), cuda);
  torch::nn::Linear linear(4, 2);
  auto report = berth::place(*linear, device, berth::PlacementPolicy::Move);
  std::cout << "consumer: " << berth::device_name(device) << " | " << report.summary() << std::endl;
  try {
    berth::parse_device("gpu");
  } catch (const berth::Error& e) {
    std::cout << "consumer: caught " << e.what() << std::endl;
    return 0;
  }
  return 1;
}
