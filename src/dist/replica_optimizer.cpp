// ReplicaOptimizer: a full copy of berth's AdamW on every rank, stepping on gradients its reducer finished.
#include "berth/dist/replica_optimizer.h"

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

namespace berth::dist {

int64_t tensor_bytes(const at::Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
}

void drop_gradients(const std::vector<at::Tensor>& params) {
  for (const at::Tensor& p : params) {
    if (p.grad().defined()) const_cast<at::Tensor&>(p).mutable_grad() = at::Tensor();
  }
}

ReplicaOptimizer::ReplicaOptimizer(GradientReducer& reducer, Communicator& comm)
    : reducer_(reducer), comm_(comm) {}

ReplicaOptimizer::~ReplicaOptimizer() = default;

void ReplicaOptimizer::create(torch::nn::Module&, const OptimizerSpec& spec) {
  optimizer_ = std::make_unique<optim::AdamW>(spec.groups, spec.adam);
}

StepResult ReplicaOptimizer::step(const std::vector<at::Tensor>& params, const StepOptions& options) {
  BERTH_BUG(optimizer_, "ReplicaOptimizer::step before create");
  if (options.lr) optimizer_->set_lr(*options.lr);
  reducer_.finish_gradients(params);
  if (options.loss_scale != 1) {
    torch::NoGradGuard no_grad;
    for (const at::Tensor& p : params)
      if (p.grad().defined()) p.grad().mul_(1.0 / options.loss_scale);
  }
  StepResult result;
  result.grad_norm = optim::clip_grad_norm(params, options.max_grad_norm);
  if (options.skip_on_overflow && !std::isfinite(result.grad_norm)) {
    result.overflow = true;
    drop_gradients(params);
    return result;
  }
  optimizer_->step();
  optimizer_->zero_grad_to_none();
  return result;
}

void ReplicaOptimizer::save_state(const std::string& checkpoint_dir) {
  BERTH_BUG(optimizer_, "ReplicaOptimizer::save_state before create");
  if (comm_.rank() == 0) optim::save_optimizer_state(*optimizer_, checkpoint_dir + "/optimizer.safetensors");
}

void ReplicaOptimizer::load_state(const std::string& checkpoint_dir, const std::string& placement,
                                  torch::nn::Module& model) {
  BERTH_BUG(optimizer_, "ReplicaOptimizer::load_state before create");
  // The state is read onto the CPU and then follows its parameters, wherever those are: the resume bug of
  // optimizer state left on another device cannot happen.
  if (has_zero_shards(checkpoint_dir)) {
    load_zero_checkpoint(checkpoint_dir);
  } else {
    optim::load_optimizer_state(*optimizer_, checkpoint_dir + "/optimizer.safetensors", c10::kCPU);
  }
  place_optimizer_state(*optimizer_, parse_placement_policy(placement), &model);
}

// A checkpoint ZeRO wrote (any world size and stage): every parameter's whole state, rebuilt from the shards.
void ReplicaOptimizer::load_zero_checkpoint(const std::string& checkpoint_dir) {
  std::vector<at::Tensor> params;
  for (const auto& group : optimizer_->param_groups())
    for (const auto& p : group.params()) params.push_back(p);
  const FlatLayout layout = make_flat_layout(optimizer_->param_names(), params);
  const std::vector<ParamSegment> wanted = layout.segments_in(0, layout.numel);
  int64_t step = 0;
  const std::vector<SegmentState> states = load_zero_segments(checkpoint_dir, layout, wanted, &step);
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

int64_t ReplicaOptimizer::state_bytes() const {
  int64_t bytes = 0;
  if (!optimizer_) return 0;
  for (const auto& item : optimizer_->state()) {
    const auto& state = static_cast<const torch::optim::AdamWParamState&>(*item.second);
    bytes += tensor_bytes(state.exp_avg()) + tensor_bytes(state.exp_avg_sq());
  }
  return bytes;
}

}  // namespace berth::dist
