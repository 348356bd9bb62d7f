// The seams' shared parts: what a GradientSync holds, and the one-process strategy.
#include "berth/dist/gradient_sync.h"

#include <torch/torch.h>

#include "berth/dist/local_gradient_sync.h"

namespace berth::dist {

GradientReducer::~GradientReducer() = default;
ShardedOptimizer::~ShardedOptimizer() = default;
ParameterResidency::~ParameterResidency() = default;
GradientSync::~GradientSync() = default;

MemoryFootprint GradientSync::memory_footprint(torch::nn::Module& model) {
  MemoryFootprint footprint;
  footprint.parameters = residency().parameter_bytes(model);
  footprint.gradients = reducer().gradient_bytes();
  footprint.optimizer_states = optimizer().state_bytes();
  return footprint;
}

int64_t whole_parameter_bytes(torch::nn::Module& model) {
  int64_t bytes = 0;
  for (const auto& p : model.parameters()) bytes += tensor_bytes(p);
  return bytes;
}

LocalGradientSync::LocalGradientSync() : comm_(make_local_communicator()), optimizer_(*this, *comm_) {}

LocalGradientSync::~LocalGradientSync() = default;

// Gradients are final once backward is done: this is their peak, before the step frees them.
void LocalGradientSync::finish_gradients(const std::vector<at::Tensor>& params) {
  gradient_bytes_ = 0;
  for (const at::Tensor& p : params) gradient_bytes_ += tensor_bytes(p.grad());
}

int64_t LocalGradientSync::parameter_bytes(torch::nn::Module& model) const {
  return whole_parameter_bytes(model);
}

std::shared_ptr<GradientSync> make_local_gradient_sync() { return std::make_shared<LocalGradientSync>(); }

}  // namespace berth::dist
