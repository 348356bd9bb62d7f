// Activation (gradient) checkpointing: a transformer block's forward that keeps only its input, and runs
// again during backward to get its gradients (torch.utils.checkpoint, which libtorch's C++ API lacks).
#pragma once

#include "berth/model/layer_hooks.h"

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace berth {

// Which transformer layers a model checkpoints: HF's activation_checkpointing_enable(every_n_layers=n)
// checkpoints layers 0, n, 2n, ... (every layer for n = 1) and leaves the rest to keep their activations.
struct GradientCheckpointing {
  bool enabled = false;
  int64_t every_n_layers = 1;
  bool layer(size_t index) const { return enabled && static_cast<int64_t>(index) % every_n_layers == 0; }
};

// One block's forward. A checkpointed block's function is kept until its backward, so it must own what it
// uses (capture by value); tensors it captures must not need gradients (masks, rotary tables): only `input`
// and the module's parameters get them.
using BlockForward = std::function<at::Tensor(const at::Tensor&)>;

// input: any -> fn(input), where fn uses `params` (the block's parameters). Runs fn without autograd and
// saves `input`, the CPU (and, for a CUDA input, the CUDA) generator state and the autocast state. Backward
// restores them, runs fn again with autograd, and computes the gradients of input and params through that
// run (torch::autograd::grad, which accumulates nothing), then hands them on as this node's: each
// parameter's gradient reaches its accumulator once, in the outer backward, so DDP's and ZeRO's gradient
// hooks and end-of-backward callbacks see what they see without checkpointing, and dropout draws the same
// masks. The parameters being inputs, the block's output requires grad even when `input` does not.
at::Tensor checkpoint(BlockForward fn, const at::Tensor& input, const std::vector<at::Tensor>& params);

// A model's transformer layer `block` (module `layer`): fn(input) wrapped by the layer hooks (when set), and
// checkpointed inside them when `checkpointed` and autograd is recording. Backward then runs: the hooks'
// "backward about to start" (ZeRO-3 gathers the block again), the recomputation and its backward, then
// "backward finished" (ZeRO-3 releases it).
at::Tensor run_layer_block(LayerHooks* hooks, const std::string& block, torch::nn::Module& layer,
                           const at::Tensor& input, const BlockForward& fn, bool checkpointed);

// How many checkpointed blocks have been recomputed in this process (tests and benchmarks count them).
int64_t checkpoint_recomputations();

}  // namespace berth
