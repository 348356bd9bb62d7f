// Global-norm gradient clipping with torch.nn.utils.clip_grad_norm_'s arithmetic.
#include "berth/optim/clip_grad.h"

#include <torch/torch.h>

namespace berth::optim {

double clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params) {
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return 0.0;
  const c10::Device device = grads.front().device();
  std::vector<at::Tensor> norms;
  norms.reserve(grads.size());
  // torch: norms = [torch.norm(g, 2).to(device) for g in grads]; total = torch.norm(torch.stack(norms), 2).
  // The dtype of the first norm keeps stack() defined when grads mix dtypes.
  for (const at::Tensor& g : grads) norms.push_back(at::norm(g, 2).to(device, grads.front().scalar_type()));
  const at::Tensor total_norm = at::norm(at::stack(norms), 2);
  if (max_norm > 0) {
    const at::Tensor clip_coef = max_norm / (total_norm + 1e-6);
    const double coef = clip_coef.item<double>();
    // !(coef >= 1) rather than coef < 1: a NaN norm scales the grads to NaN, as torch does.
    if (!(coef >= 1.0)) {
      for (at::Tensor& g : grads) g.mul_(clip_coef.to(g.device()));
    }
  }
  return total_norm.item<double>();
}

}  // namespace berth::optim
