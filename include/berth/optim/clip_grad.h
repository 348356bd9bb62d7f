// Gradient clipping by global L2 norm, as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace berth::optim {

// The L2 norm over all grads, computed as torch does (the norm of the per-tensor norms, in the grads'
// dtype, on the first grad's device). When max_norm > 0 every grad is scaled by max_norm / (norm + 1e-6)
// if that is below 1 (or NaN, as torch). Params without grad are ignored; none at all gives 0. Returns the
// norm before clipping.
double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace berth::optim
