// HF Trainer's parameter groups: weight decay for weights, none for biases and LayerNorm weights.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace berth::optim {

// One optimizer parameter group with the parameters' dotted names (parallel to params).
struct NamedParamGroup {
  std::vector<std::string> names;
  std::vector<at::Tensor> params;
  double weight_decay = 0;
};

// The parameters HF's get_decay_parameter_names picks: every parameter not inside a LayerNorm module and
// whose name does not contain "bias".
bool hf_decays(const torch::nn::Module& module, const std::string& param_name);

// [decay group (weight_decay), no-decay group (0)], each in module.named_parameters() order, only
// parameters that require grad; empty groups are dropped.
std::vector<NamedParamGroup> hf_param_groups(const torch::nn::Module& module, double weight_decay);

}  // namespace berth::optim
