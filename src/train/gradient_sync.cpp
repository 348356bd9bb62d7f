// The defaults of a GradientSync: this process alone as its channel, and a full replica of berth's AdamW.
#include "berth/train/gradient_sync.h"

#include <torch/torch.h>

#include <cmath>

#include "berth/core/compat.h"
#include "berth/core/error.h"
#include "berth/dist/flat_layout.h"
#include "berth/dist/zero_checkpoint.h"
#include "berth/optim/clip_grad.h"
#include "berth/optim/optimizer_state_file.h"
#include "berth/placement/optimizer_state.h"
#include "berth/placement/place.h"

namespace berth::train {

namespace {

int64_t bytes_of(const at::Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
}

}  // namespace

GradientSync::~GradientSync() = default;

dist::Communicator& GradientSync::communicator() {
  static const std::shared_ptr<dist::Communicator> local = dist::make_local_communicator();
  return *local;
}

void GradientSync::create_optimizer(torch::nn::Module&, const OptimizerSpec& spec) {
  optimizer_ = std::make_unique<optim::AdamW>(spec.groups, spec.adam);
}

StepResult GradientSync::step(const std::vector<at::Tensor>& params, const StepOptions& options) {
  BERTH_BUG(optimizer_, "GradientSync::step before create_optimizer");
  finish_gradients(params);
  if (options.loss_scale != 1) {
    torch::NoGradGuard no_grad;
    for (const at::Tensor& p : params)
      if (p.grad().defined()) p.grad().mul_(1.0 / options.loss_scale);
  }
  StepResult result;
  result.grad_norm = optim::clip_grad_norm(params, options.max_grad_norm);
  if (options.skip_on_overflow && !std::isfinite(result.grad_norm)) {
    result.overflow = true;
    zero_grad(params);
    return result;
  }
  optimizer_->step();
  optimizer_->zero_grad_to_none();
  return result;
}

void GradientSync::set_lr(double lr) {
  BERTH_BUG(optimizer_, "GradientSync::set_lr before create_optimizer");
  optimizer_->set_lr(lr);
}

void GradientSync::zero_grad(const std::vector<at::Tensor>& params) {
  for (const at::Tensor& p : params) {
    if (p.grad().defined()) const_cast<at::Tensor&>(p).mutable_grad() = at::Tensor();
  }
}

void GradientSync::save_optimizer_state(const std::string& checkpoint_dir) {
  BERTH_BUG(optimizer_, "GradientSync::save_optimizer_state before create_optimizer");
  if (rank() == 0) optim::save_optimizer_state(*optimizer_, checkpoint_dir + "/optimizer.safetensors");
}

void GradientSync::load_optimizer_state(const std::string& checkpoint_dir, const std::string& placement,
                                        torch::nn::Module& model) {
  BERTH_BUG(optimizer_, "GradientSync::load_optimizer_state before create_optimizer");
  // The state is read onto the CPU and then follows its parameters, wherever those are: the resume bug of
  // optimizer state left on another device cannot happen.
  if (dist::has_zero_shards(checkpoint_dir)) {
    load_zero_checkpoint(checkpoint_dir);
  } else {
    optim::load_optimizer_state(*optimizer_, checkpoint_dir + "/optimizer.safetensors", c10::kCPU);
  }
  place_optimizer_state(*optimizer_, parse_placement_policy(placement), &model);
}

// A checkpoint ZeRO wrote (any world size and stage): every parameter's whole state, rebuilt from the shards.
void GradientSync::load_zero_checkpoint(const std::string& checkpoint_dir) {
  std::vector<at::Tensor> params;
  for (const auto& group : optimizer_->param_groups())
    for (const auto& p : group.params()) params.push_back(p);
  const dist::FlatLayout layout = dist::make_flat_layout(optimizer_->param_names(), params);
  const std::vector<dist::ParamSegment> wanted = layout.segments_in(0, layout.numel);
  int64_t step = 0;
  const std::vector<dist::SegmentState> states =
      dist::load_zero_segments(checkpoint_dir, layout, wanted, &step);
  BERTH_BUG(states.size() == params.size(), "one ZeRO segment per whole parameter expected");
  for (size_t i = 0; i < params.size(); ++i) {
    const at::TensorOptions cpu = params[i].options().device(c10::kCPU);
    auto state = std::make_unique<torch::optim::AdamWParamState>();
    state->step(step);
    state->exp_avg(states[i].exp_avg.view(params[i].sizes()).to(cpu));
    state->exp_avg_sq(states[i].exp_avg_sq.view(params[i].sizes()).to(cpu));
    optimizer_->state()[compat::optimizer_state_key(params[i])] = std::move(state);
  }
}

MemoryFootprint GradientSync::memory_footprint(torch::nn::Module& model) const {
  MemoryFootprint footprint;
  for (const auto& p : model.parameters()) {
    footprint.parameters += bytes_of(p);
    footprint.gradients += bytes_of(p.grad());
  }
  if (optimizer_) {
    for (const auto& item : optimizer_->state()) {
      const auto& state = static_cast<const torch::optim::AdamWParamState&>(*item.second);
      footprint.optimizer_states += bytes_of(state.exp_avg()) + bytes_of(state.exp_avg_sq());
    }
  }
  return footprint;
}

}  // namespace berth::train
