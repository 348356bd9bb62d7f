// berth's AdamW: torch.optim.AdamW's update with a fused one-pass CPU kernel for float32 parameters.
#pragma once

#include "berth/optim/param_groups.h"

#include <torch/optim/adamw.h>

#include <cstdint>
#include <string>
#include <vector>

namespace berth::optim {

// HF TrainingArguments' defaults (learning_rate, adam_beta1, adam_beta2, adam_epsilon).
struct AdamWOptions {
  double lr = 5e-5;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

// torch.optim.AdamW's exact update: p *= 1 - lr*wd (decoupled weight decay), m = b1*m + (1-b1)*g,
// v = b2*v + (1-b2)*g*g, p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps). Contiguous float32 CPU parameters take
// a fused kernel (one pass over p, g, m, v); everything else (CUDA, float64, strided) takes torch ops with
// the same math. The state is torch::optim::AdamWParamState in the inherited state map, so torch's and
// berth's state tools (berth/placement/optimizer_state.h) work on it unchanged. amsgrad is not supported.
class AdamW : public torch::optim::AdamW {
 public:
  // Each group keeps its weight_decay; lr, betas and eps come from `options`. Throws berth::Error for an
  // invalid option, a group whose names and params differ in length, or a parameter that is in two groups.
  AdamW(const std::vector<NamedParamGroup>& groups, const AdamWOptions& options);

  // Parameters without grad are skipped (as torch does). Returns the closure's loss, or an undefined tensor.
  at::Tensor step(LossClosure closure = nullptr) override;

  void set_lr(double lr);  // every group
  double lr() const;       // group 0's (all groups share it unless changed through param_groups())
  const std::vector<std::string>& param_names()
      const;  // param_groups order: group 0's params, then group 1's
  void
  zero_grad_to_none();  // every grad reset to undefined: cheaper than 1.13's zero_grad (zeroing in place)

  // Diagnostics: parameter updates done by the fused kernel and by the torch-ops path since construction.
  int64_t fused_updates() const { return fused_updates_; }
  int64_t fallback_updates() const { return fallback_updates_; }
  // false forces the torch-ops path everywhere (for equivalence tests and benchmarks).
  void set_fused_enabled(bool enabled) { fused_enabled_ = enabled; }
  bool fused_enabled() const { return fused_enabled_; }

 private:
  std::vector<std::string> names_;
  int64_t fused_updates_ = 0;
  int64_t fallback_updates_ = 0;
  bool fused_enabled_ = true;
};

}  // namespace berth::optim
