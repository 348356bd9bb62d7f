// GradientReducer: how each rank's gradients become the world's mean (nothing, DDP's all-reduce, ZeRO's
// reduce-scatter), at fixed points of the training loop.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace torch::nn {
class Module;
}

namespace berth::dist {

// Every call is collective: every rank makes it, in the same order.
class GradientReducer {
 public:
  virtual ~GradientReducer();
  // Once per train(), after the model is placed and before the first step (DDP: broadcast rank 0's
  // parameters and check that every rank holds the same structure; ZeRO: partition). Called again with a
  // fresh model (the next train() or search trial), it lets go of the previous one first.
  virtual void prepare(torch::nn::Module& model) = 0;
  // Before each micro-step's backward: whether this backward ends an accumulation (only then do gradients
  // need to travel; the others run as DDP's no_sync).
  virtual void begin_backward(bool last_micro_step) = 0;
  // After the last micro-step's backward, before clipping: every rank's gradients become the world's mean
  // (in param.grad(), or in the owner's shard under ZeRO 2-3).
  virtual void finish_gradients(const std::vector<at::Tensor>& params) = 0;
  // Bytes of gradient storage this rank held at the peak of the last step (when finish_gradients returned):
  // param.grad() tensors plus the reducer's own buffers (DDP's buckets, ZeRO's partition and buckets).
  virtual int64_t gradient_bytes() const = 0;
};

}  // namespace berth::dist
