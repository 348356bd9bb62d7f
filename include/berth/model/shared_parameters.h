// A caller's own model's tensors as a berth model's parameters, shared rather than copied: a PyTorch model
// (transformers' PreTrainedModel, any torch.nn.Module of a family berth implements) that berth trains in
// place.
#pragma once

#include "berth/model/checkpoint_io.h"
#include "berth/model/pretrained.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace berth {

// Tensors by HF name, as a PyTorch model's state_dict(keep_vars=True) holds them (tied names included).
using SharedTensors = std::map<std::string, at::Tensor>;

// Makes each parameter of `module` (built from the same config) a view of the storage of the tensor of its
// name in `tensors`: training then updates the caller's tensors, and the caller sees every step. Each
// parameter must be there with the module's shape and dtype, all on one device; otherwise berth::Error names
// the tensor, what berth's model expects, what `source` (the caller's model, for messages) holds, and the
// fix. Tensors the module has no parameter or buffer for (nor layout.ignored names) are reported as
// unexpected.
LoadReport share_parameters(torch::nn::Module& module, const SharedTensors& tensors,
                            const CheckpointLayout& layout, const std::string& source);

}  // namespace berth
