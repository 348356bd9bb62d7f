// The FlatLayout of a module's parameters, in named_parameters order, as the ZeRO tests build it.
#pragma once

#include <torch/nn/module.h>

#include <string>
#include <vector>

#include "berth/dist/flat_layout.h"

namespace berth::testing {

// trainable_only: skip parameters that do not require a gradient (as ZeRO's gradient sync does).
inline dist::FlatLayout module_flat_layout(const torch::nn::Module& model, bool trainable_only = false) {
  std::vector<std::string> names;
  std::vector<at::Tensor> params;
  for (const auto& item : model.named_parameters()) {
    if (trainable_only && !item.value().requires_grad()) continue;
    names.push_back(item.key());
    params.push_back(item.value());
  }
  return dist::make_flat_layout(names, params);
}

}  // namespace berth::testing
