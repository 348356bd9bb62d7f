// ZeroShard: views of a rank's owned pieces, and the lifetime of their reduced gradients.
#include "dist/zero_shard.h"

#include <ATen/ATen.h>

#include "berth/core/error.h"

namespace berth::dist {

at::Tensor ZeroShard::values(size_t i) const {
  if (partitioned) return partitioned->owned_piece(i);
  const ParamSegment& s = owned[i];
  return params[static_cast<size_t>(s.param)].detach().view({-1}).narrow(0, s.begin, s.numel());
}

at::Tensor ZeroShard::gradient(size_t i) const {
  BERTH_CHECK(i < owned.size(), "ZeRO: piece ", i, " does not exist (this rank owns ", owned.size(), ")");
  BERTH_CHECK(gradients.defined(), "ZeRO: no gradients reduced yet");
  return gradients.narrow(0, owned_offset[i], owned[i].numel());
}

void ZeroShard::ensure_gradients(bool offload) {
  if (gradients.defined()) return;
  const c10::Device device = offload ? c10::Device(c10::kCPU) : params.front().device();
  gradients = at::zeros({owned_numel}, at::TensorOptions().dtype(at::kFloat).device(device));
}

void ZeroShard::drop_gradients(const std::vector<at::Tensor>& others, bool keep_buffer) {
  for (const at::Tensor& p : params)
    if (p.grad().defined()) const_cast<at::Tensor&>(p).mutable_grad().reset();
  for (const at::Tensor& p : others)
    if (p.grad().defined()) const_cast<at::Tensor&>(p).mutable_grad().reset();
  if (gradients.defined()) {
    if (keep_buffer)
      gradients.zero_();
    else
      gradients = at::Tensor();  // allocated again by the next reduction
  }
  reduced = false;
}

void ZeroShard::clear() {
  if (partitioned) partitioned->unpartition();
  partitioned.reset();
  prepared = false;
  params.clear();
  owned.clear();
  owned_offset.clear();
  owned_numel = 0;
  gradients = at::Tensor();
  reduced = false;
}

}  // namespace berth::dist
