// HF Trainer's decay / no-decay parameter groups from a module's parameters and LayerNorm modules.
#include "berth/optim/param_groups.h"

#include <torch/torch.h>

#include <unordered_set>

namespace berth::optim {
namespace {

bool is_layer_norm(const torch::nn::Module& module) {
  return dynamic_cast<const torch::nn::LayerNormImpl*>(&module) != nullptr;
}

// Dotted names of the parameters owned directly by LayerNorm modules (HF: ALL_LAYERNORM_LAYERS =
// nn.LayerNorm).
std::unordered_set<std::string> layer_norm_params(const torch::nn::Module& module) {
  std::unordered_set<std::string> out;
  auto add = [&](const torch::nn::Module& norm, const std::string& prefix) {
    for (const auto& item : norm.named_parameters(/*recurse=*/true))
      out.insert(prefix.empty() ? item.key() : prefix + "." + item.key());
  };
  if (is_layer_norm(module)) add(module, "");
  // include_self=false: the root may not be held by a shared_ptr, which named_modules needs for itself.
  for (const auto& item : module.named_modules("", /*include_self=*/false)) {
    if (is_layer_norm(*item.value())) add(*item.value(), item.key());
  }
  return out;
}

}  // namespace

bool hf_decays(const torch::nn::Module& module, const std::string& param_name) {
  return layer_norm_params(module).count(param_name) == 0 && param_name.find("bias") == std::string::npos;
}

std::vector<NamedParamGroup> hf_param_groups(const torch::nn::Module& module, double weight_decay) {
  const std::unordered_set<std::string> norms = layer_norm_params(module);
  NamedParamGroup decay;
  decay.weight_decay = weight_decay;
  NamedParamGroup no_decay;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    if (!item.value().requires_grad()) continue;
    const bool decays = norms.count(item.key()) == 0 && item.key().find("bias") == std::string::npos;
    NamedParamGroup& group = decays ? decay : no_decay;
    group.names.push_back(item.key());
    group.params.push_back(item.value());
  }
  std::vector<NamedParamGroup> out;
  if (!decay.params.empty()) out.push_back(std::move(decay));
  if (!no_decay.params.empty()) out.push_back(std::move(no_decay));
  return out;
}

}  // namespace berth::optim
