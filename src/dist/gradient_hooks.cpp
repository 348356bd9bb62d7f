// GradientHooks: post-hooks on gradient accumulators, as c10d's Reducer installs them.
#include "dist/gradient_hooks.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <memory>

#include "berth/core/error.h"

namespace berth::dist {

GradientHooks::~GradientHooks() { remove(); }

void GradientHooks::install(const std::vector<at::Tensor>& params, const std::vector<std::string>& names,
                            const std::function<void(size_t)>& on_ready) {
  BERTH_BUG(params.size() == names.size(), "GradientHooks::install got ", params.size(), " parameters and ",
            names.size(), " names");
  remove();
  hooks_.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    Hook hook;
    hook.accumulator = torch::autograd::impl::grad_accumulator(params[i]);
    BERTH_BUG(hook.accumulator != nullptr, "no gradient accumulator for ", names[i]);
    hook.key = hook.accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [on_ready, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          on_ready(i);
          return outputs;
        }));
    hooks_.push_back(std::move(hook));
  }
}

void GradientHooks::remove() {
  for (Hook& hook : hooks_)
    if (hook.accumulator && hook.key != 0) hook.accumulator->del_post_hook(hook.key);
  hooks_.clear();
}

}  // namespace berth::dist
