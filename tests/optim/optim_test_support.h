// Helpers for the optim tests: reading the PyTorch goldens (tests/goldens/optim_goldens.py) as tensors.
#pragma once

#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace berth::testing {

inline nlohmann::json optim_golden(const std::string& name) {
  std::ifstream in(golden_dir() + "/optim/" + name);
  if (!in.good()) {
    ADD_FAILURE() << "missing golden optim/" << name << ": build the berth_goldens target";
    return nlohmann::json::object();
  }
  return nlohmann::json::parse(in);
}

// {"shape": [...], "values": [...]} -> a CPU tensor of `dtype`.
inline at::Tensor golden_tensor(const nlohmann::json& j, c10::ScalarType dtype) {
  const std::vector<double> values = j.at("values").get<std::vector<double>>();
  const std::vector<int64_t> shape = j.at("shape").get<std::vector<int64_t>>();
  return torch::tensor(values, torch::kFloat64).reshape(shape).to(dtype);
}

// max |a - b| / (|b| + atol) over the elements: 0 for equal tensors.
inline double max_rel_diff(const at::Tensor& a, const at::Tensor& b, double atol = 1e-12) {
  const at::Tensor a64 = a.detach().to(torch::kFloat64);
  const at::Tensor b64 = b.detach().to(torch::kFloat64);
  return ((a64 - b64).abs() / (b64.abs() + atol)).max().item<double>();
}

}  // namespace berth::testing
