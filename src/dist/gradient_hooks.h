// GradientHooks: a callback on every trainable parameter's gradient accumulator, run right after backward
// accumulated that parameter's gradient, and taken off again before its owner goes.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "berth/core/compat.h"

namespace berth::dist {

class GradientHooks {
 public:
  GradientHooks() = default;
  ~GradientHooks();
  GradientHooks(const GradientHooks&) = delete;
  GradientHooks& operator=(const GradientHooks&) = delete;

  // Hooks each of `params` (leaves; names[i] names params[i]) so that on_ready(i) runs on the autograd thread
  // after every accumulation of params[i]'s gradient. Hooks from an earlier install() go first.
  void install(const std::vector<at::Tensor>& params, const std::vector<std::string>& names,
               const std::function<void(size_t)>& on_ready);
  // Takes every hook off (safe to call twice). The accumulators can outlive the hooks' owner (a graph still
  // holds them): a hook left behind would call into freed memory.
  void remove();

 private:
  struct Hook {
    // The parameter holds its accumulator only weakly: holding it here keeps the same node (and its hook)
    // for every graph built from the parameter.
    compat::AutogradNodePtr accumulator;
    uintptr_t key = 0;
  };
  std::vector<Hook> hooks_;
};

}  // namespace berth::dist
