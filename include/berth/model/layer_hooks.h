// LayerHooks: code that runs around each block of a model's forward (ZeRO-3 gathers a block's parameters
// just before it runs and releases them after, in forward and in backward).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace berth {

// A block is a module whose parameters are used together: "bert.embeddings", "bert.encoder.layer.<i>",
// "bert.pooler", "classifier" (its module path, the prefix of its parameters' names). The model calls
// before_forward(block, input) just before the block's forward and after_forward(block, output) just after,
// and uses the tensors they return in place of input and output, so a hook can wrap them in autograd
// functions whose backward marks "this block's backward is about to start" (after_forward's wrapper) and
// "this block's backward has finished" (before_forward's wrapper, when input requires grad).
class LayerHooks {
 public:
  virtual ~LayerHooks() = default;
  virtual at::Tensor before_forward(const std::string& block, const at::Tensor& input) = 0;
  virtual at::Tensor after_forward(const std::string& block, const at::Tensor& output) = 0;
};

}  // namespace berth
