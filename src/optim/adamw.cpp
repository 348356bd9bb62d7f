// berth's AdamW: torch.optim.AdamW's update, fused into one pass for contiguous float32 CPU parameters.
#include "berth/optim/adamw.h"

#include "berth/core/compat.h"
#include "berth/core/error.h"
#include "berth/optim/adamw_kernel.h"

#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <unordered_set>
#include <utility>

namespace berth::optim {
namespace {

void check_options(const AdamWOptions& options) {
  BERTH_CHECK(options.lr >= 0, "AdamW: lr must be >= 0, found ", options.lr,
              ". Fix: pass a learning rate >= 0");
  BERTH_CHECK(options.beta1 >= 0 && options.beta1 < 1, "AdamW: beta1 must be in [0, 1), found ",
              options.beta1, ". Fix: use e.g. 0.9 (HF's adam_beta1 default)");
  BERTH_CHECK(options.beta2 >= 0 && options.beta2 < 1, "AdamW: beta2 must be in [0, 1), found ",
              options.beta2, ". Fix: use e.g. 0.999 (HF's adam_beta2 default)");
  BERTH_CHECK(options.eps >= 0, "AdamW: eps must be >= 0, found ", options.eps,
              ". Fix: use e.g. 1e-8 (HF's adam_epsilon default)");
}

torch::optim::AdamWOptions torch_options(const AdamWOptions& options, double weight_decay) {
  torch::optim::AdamWOptions out(options.lr);
  out.betas(std::make_tuple(options.beta1, options.beta2));
  out.eps(options.eps);
  out.weight_decay(weight_decay);
  out.amsgrad(false);
  return out;
}

std::vector<torch::optim::OptimizerParamGroup> torch_groups(const std::vector<NamedParamGroup>& groups,
                                                            const AdamWOptions& options) {
  check_options(options);
  std::unordered_set<const c10::TensorImpl*> seen;
  std::vector<torch::optim::OptimizerParamGroup> out;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const NamedParamGroup& group = groups[g];
    BERTH_CHECK(group.names.size() == group.params.size(), "AdamW: param group ", g, " has ",
                group.names.size(), " names but ", group.params.size(),
                " params. Fix: give one name per parameter");
    BERTH_CHECK(group.weight_decay >= 0, "AdamW: param group ", g, " has weight_decay ", group.weight_decay,
                ", expected >= 0. Fix: pass a weight decay >= 0");
    for (std::size_t i = 0; i < group.params.size(); ++i) {
      BERTH_CHECK(group.params[i].defined(), "AdamW: parameter '", group.names[i], "' (group ", g,
                  ") is an undefined tensor. Fix: pass the module's parameters");
      BERTH_CHECK(seen.insert(group.params[i].unsafeGetTensorImpl()).second, "AdamW: parameter '",
                  group.names[i], "' is in more than one param group. Fix: put each parameter in one group");
    }
    out.emplace_back(group.params, std::make_unique<torch::optim::AdamWOptions>(
                                       torch_options(options, group.weight_decay)));
  }
  return out;
}

bool fusable(const at::Tensor& p, const at::Tensor& g, const at::Tensor& m, const at::Tensor& v) {
  for (const at::Tensor* t : {&p, &g, &m, &v}) {
    if (!t->device().is_cpu() || t->scalar_type() != at::kFloat || !t->is_contiguous() || t->is_sparse())
      return false;
  }
  return g.numel() == p.numel() && m.numel() == p.numel() && v.numel() == p.numel();
}

}  // namespace

AdamW::AdamW(const std::vector<NamedParamGroup>& groups, const AdamWOptions& options)
    : torch::optim::AdamW(torch_groups(groups, options), torch_options(options, 0)) {
  // torch 2.15's Optimizer merges each group's options with the defaults field by field, taking the default
  // wherever the group's value equals the options type's own default: a group asking for weight_decay 0.01
  // (AdamWOptions' default) would get the optimizer's 0. Setting each group's options afterwards keeps them.
  for (std::size_t g = 0; g < groups.size(); ++g)
    param_groups()[g].set_options(
        std::make_unique<torch::optim::AdamWOptions>(torch_options(options, groups[g].weight_decay)));
  for (const NamedParamGroup& group : groups)
    names_.insert(names_.end(), group.names.begin(), group.names.end());
}

at::Tensor AdamW::step(LossClosure closure) {
  at::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    auto& options = static_cast<torch::optim::AdamWOptions&>(group.options());
    BERTH_CHECK(!options.amsgrad(),
                "AdamW: amsgrad is not supported by berth's AdamW, found amsgrad=true in a ",
                "param group. Fix: leave amsgrad off, or use torch::optim::AdamW");
    const double lr = options.lr();
    const double weight_decay = options.weight_decay();
    const double beta1 = std::get<0>(options.betas());
    const double beta2 = std::get<1>(options.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const at::Tensor& grad = p.grad();
      BERTH_CHECK(!grad.is_sparse(), "AdamW: sparse gradients are not supported (as in torch.optim.AdamW). ",
                  "Fix: use dense embeddings (sparse=false)");
      const auto key = compat::optimizer_state_key(p);
      auto it = state().find(key);
      if (it == state().end()) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = state().emplace(key, std::move(fresh)).first;
      }
      auto& st = static_cast<torch::optim::AdamWParamState&>(*it->second);
      at::Tensor& exp_avg = st.exp_avg();
      at::Tensor& exp_avg_sq = st.exp_avg_sq();
      st.step(st.step() + 1);
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(st.step()));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(st.step()));
      const double step_size = lr / bias_correction1;
      const double bias_correction2_sqrt = std::sqrt(bias_correction2);

      if (fused_enabled_ && fusable(p, grad, exp_avg, exp_avg_sq)) {
        // The same double-then-float rounding of the step's scalars as below, through the public kernel
        // (which bumps the version counters as torch's in-place ops would).
        const AdamWStepScalars s =
            adamw_scalars(lr, beta1, beta2, options.eps(), weight_decay, static_cast<int64_t>(st.step()));
        adamw_step(p, grad, exp_avg, exp_avg_sq, s);
        ++fused_updates_;
        continue;
      }
      // torch::optim::AdamW's own ops, for every dtype and device.
      if (weight_decay != 0) p.mul_(1 - lr * weight_decay);
      exp_avg.mul_(beta1).add_(grad, 1 - beta1);
      exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      const at::Tensor denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(options.eps());
      p.addcdiv_(exp_avg, denom, -step_size);
      ++fallback_updates_;
    }
  }
  return loss;
}

void AdamW::set_lr(double lr) {
  BERTH_CHECK(lr >= 0, "AdamW: lr must be >= 0, found ", lr, ". Fix: pass a learning rate >= 0");
  for (auto& group : param_groups()) group.options().set_lr(lr);
}

double AdamW::lr() const {
  BERTH_CHECK(!param_groups().empty(), "AdamW: lr() of an optimizer without param groups",
              ". Fix: give the optimizer at least one parameter");
  return param_groups().front().options().get_lr();
}

const std::vector<std::string>& AdamW::param_names() const { return names_; }

void AdamW::zero_grad_to_none() {
  for (auto& group : param_groups()) {
    for (auto& p : group.params()) {
      if (p.mutable_grad().defined()) p.mutable_grad().reset();
    }
  }
}

}  // namespace berth::optim
