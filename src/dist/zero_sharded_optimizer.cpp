// ZeroShardedOptimizer: AdamW on a rank's owned pieces, then the updated partitions all-gathered (stages
// 1-2) or handed to PartitionedParameters (stage 3); checkpoints as world-size-independent ZeRO shards.
#include "dist/zero_sharded_optimizer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "berth/core/error.h"
#include "berth/dist/replica_optimizer.h"
#include "berth/dist/zero3_parameters.h"
#include "berth/dist/zero_checkpoint.h"
#include "berth/optim/adamw_kernel.h"
#include "dist/zero_shard.h"

namespace berth::dist {

namespace {

bool fusable(const at::Tensor& p, const at::Tensor& g, const at::Tensor& m, const at::Tensor& v) {
  for (const at::Tensor* t : {&p, &g, &m, &v})
    if (!t->device().is_cpu() || t->scalar_type() != at::kFloat || !t->is_contiguous()) return false;
  return g.numel() == p.numel() && m.numel() == p.numel() && v.numel() == p.numel();
}

// Each parameter's weight decay by name, from HF's parameter groups (a parameter in two groups: an error).
std::map<std::string, double> weight_decay_by_name(const std::vector<optim::NamedParamGroup>& groups) {
  std::map<std::string, double> decay;
  for (size_t g = 0; g < groups.size(); ++g) {
    const optim::NamedParamGroup& group = groups[g];
    BERTH_CHECK(group.names.size() == group.params.size(), "AdamW: param group ", g, " has ",
                group.names.size(), " names but ", group.params.size(), " params. Fix: give one name per ",
                "parameter");
    BERTH_CHECK(group.weight_decay >= 0, "AdamW: param group ", g, " has weight_decay ", group.weight_decay,
                ", expected >= 0");
    for (const std::string& name : group.names)
      BERTH_CHECK(decay.emplace(name, group.weight_decay).second, "AdamW: parameter '", name,
                  "' is in more than one param group. Fix: put each parameter in one group");
  }
  return decay;
}

}  // namespace

ZeroShardedOptimizer::ZeroShardedOptimizer(GradientReducer& reducer, ZeroShard& shard, Communicator& comm,
                                           const ZeroOptions& options)
    : reducer_(reducer), shard_(shard), comm_(comm), options_(options) {}

ZeroShardedOptimizer::~ZeroShardedOptimizer() = default;

void ZeroShardedOptimizer::reset() {
  master_.clear();
  exp_avg_.clear();
  exp_avg_sq_.clear();
  weight_decay_.clear();
  ready_ = false;
}

void ZeroShardedOptimizer::create(torch::nn::Module&, const OptimizerSpec& spec) {
  BERTH_CHECK(shard_.prepared, "ZeroGradientSync::create before prepare(model). Fix: prepare first");
  set_hyperparameters(spec.adam);
  const std::map<std::string, double> decay = weight_decay_by_name(spec.groups);
  step_count_ = 0;
  create_piece_state(decay);
  ready_ = true;
}

void ZeroShardedOptimizer::set_hyperparameters(const optim::AdamWOptions& adam) {
  BERTH_CHECK(adam.lr >= 0, "AdamW: lr must be >= 0, found ", adam.lr, ". Fix: pass a learning rate >= 0");
  BERTH_CHECK(adam.beta1 >= 0 && adam.beta1 < 1, "AdamW: beta1 must be in [0, 1), found ", adam.beta1,
              ". Fix: use e.g. 0.9 (HF's adam_beta1 default)");
  BERTH_CHECK(adam.beta2 >= 0 && adam.beta2 < 1, "AdamW: beta2 must be in [0, 1), found ", adam.beta2,
              ". Fix: use e.g. 0.999 (HF's adam_beta2 default)");
  BERTH_CHECK(adam.eps >= 0, "AdamW: eps must be >= 0, found ", adam.eps, ". Fix: use e.g. 1e-8");
  lr_ = adam.lr;
  beta1_ = adam.beta1;
  beta2_ = adam.beta2;
  eps_ = adam.eps;
}

// Per owned piece: its weight decay, an fp32 master (the parameter's own storage where it is fp32 and not
// offloaded, else a copy) and zeroed moments beside the master.
void ZeroShardedOptimizer::create_piece_state(const std::map<std::string, double>& decay_by_name) {
  reset();
  const bool offload = options_.offload_optimizer.enabled();
  for (size_t i = 0; i < shard_.owned.size(); ++i) {
    const ParamSegment& s = shard_.owned[i];
    const auto it = decay_by_name.find(shard_.layout.entries[static_cast<size_t>(s.param)].name);
    weight_decay_.push_back(it == decay_by_name.end() ? -1.0 : it->second);
    const at::Tensor source = shard_.values(i);  // [numel]
    at::Tensor master;
    if (!offload && source.scalar_type() == at::kFloat && source.is_contiguous()) {
      master = source;  // the parameter's own storage: no copy
    } else {
      const bool pin = offload && options_.offload_optimizer.pin_memory && shard_.params.front().is_cuda();
      const c10::Device device = offload ? c10::Device(c10::kCPU) : source.device();
      master =
          at::empty({s.numel()}, at::TensorOptions().dtype(at::kFloat).device(device).pinned_memory(pin));
      master.copy_(source);
    }
    exp_avg_.push_back(at::zeros_like(master));
    exp_avg_sq_.push_back(at::zeros_like(master));
    master_.push_back(master);
  }
}

void ZeroShardedOptimizer::set_lr(double lr) {
  BERTH_CHECK(lr >= 0, "AdamW: lr must be >= 0, found ", lr, ". Fix: pass a learning rate >= 0");
  lr_ = lr;
}

StepResult ZeroShardedOptimizer::step(const std::vector<at::Tensor>& params, const StepOptions& options) {
  BERTH_CHECK(ready_, "ZeroGradientSync::step before create. Fix: call ",
              "optimizer().create(model, spec) after prepare(model)");
  if (options.lr) set_lr(*options.lr);
  reducer_.finish_gradients(params);
  torch::NoGradGuard no_grad;
  StepResult result;
  if (options.loss_scale != 1) shard_.gradients.div_(options.loss_scale);
  result.grad_norm = global_grad_norm();
  if (!std::isfinite(result.grad_norm) && options.skip_on_overflow) {
    result.overflow = true;
    shard_.drop_gradients(params, options_.contiguous_gradients);
    return result;
  }
  if (options.max_grad_norm > 0) clip_gradients(result.grad_norm, options.max_grad_norm);
  adamw_update();
  ++stats_.steps;
  write_masters_to_parameters();
  shard_.drop_gradients(params, options_.contiguous_gradients);
  return result;
}

// Every rank's owned pieces together cover each parameter element exactly once: one all-reduce of the
// squares' sum.
double ZeroShardedOptimizer::global_grad_norm() {
  double sum_squares = 0;
  if (shard_.owned_numel > 0) {
    const double local =
        at::linalg_vector_norm(shard_.gradients, 2, c10::nullopt, false, at::kDouble).item<double>();
    sum_squares = local * local;
  }
  return std::sqrt(comm_.all_reduce_sum(sum_squares, "global gradient norm"));
}

void ZeroShardedOptimizer::clip_gradients(double grad_norm, double max_grad_norm) {
  // clip_grad_norm's coefficient, in float as torch computes it from a float norm.
  const float total = static_cast<float>(grad_norm);
  const float coef = static_cast<float>(max_grad_norm) * (1.0f / (total + 1e-6f));
  if (!(coef >= 1.0f)) shard_.gradients.mul_(coef);
}

// berth::optim::AdamW's update on every owned piece in a param group: its fused kernel where the piece is
// float32 on the CPU, else the same math in tensor ops.
void ZeroShardedOptimizer::adamw_update() {
  ++step_count_;
  const double bias_correction1 = 1 - std::pow(beta1_, static_cast<double>(step_count_));
  const double bias_correction2 = 1 - std::pow(beta2_, static_cast<double>(step_count_));
  const double step_size = lr_ / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  for (size_t i = 0; i < shard_.owned.size(); ++i) {
    const double weight_decay = weight_decay_[i];
    if (weight_decay < 0) continue;  // in no param group: not optimized (as AdamW)
    at::Tensor& p = master_[i];
    at::Tensor g = shard_.gradient(i);
    if (g.device() != p.device()) g = g.to(p.device());
    at::Tensor& m = exp_avg_[i];
    at::Tensor& v = exp_avg_sq_[i];
    if (fusable(p, g, m, v)) {
      const optim::AdamWStepScalars s =
          optim::adamw_scalars(lr_, beta1_, beta2_, eps_, weight_decay, step_count_);
      optim::adamw_step(p, g, m, v, s);
      continue;
    }
    if (weight_decay != 0) p.mul_(1 - lr_ * weight_decay);
    m.mul_(beta1_).add_(g, 1 - beta1_);
    v.mul_(beta2_).addcmul_(g, g, 1 - beta2_);
    const at::Tensor denom = (v.sqrt() / bias_correction2_sqrt).add_(eps_);
    p.addcdiv_(m, denom, -step_size);
  }
}

// Owned pieces -> the parameters every rank uses (copies where the master is separate), then the world's
// share: stages 1-2 all-gather the partitions, stage 3 lets PartitionedParameters refresh what it keeps
// whole.
void ZeroShardedOptimizer::write_masters_to_parameters() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < shard_.owned.size() && i < master_.size(); ++i) {
    at::Tensor target = shard_.values(i);
    if (!target.is_same(master_[i]) && target.data_ptr() != master_[i].data_ptr()) target.copy_(master_[i]);
  }
  if (shard_.partitioned)
    shard_.partitioned->after_step();
  else
    all_gather_parameters();
}

void ZeroShardedOptimizer::all_gather_parameters() {
  const int world = comm_.world_size();
  if (world == 1) return;
  const int64_t size = shard_.layout.padded_numel(world) / world;  // every partition's length
  for (int64_t c0 = 0; c0 < size; c0 += options_.allgather_bucket_size)
    all_gather_chunk(size, c0, std::min(options_.allgather_bucket_size, size - c0));
  for (const at::Tensor& p : shard_.params) p.unsafeGetTensorImpl()->bump_version();
}

// Elements [c0, c0 + len) of every rank's partition: this rank's from its parameters, the others' into them.
void ZeroShardedOptimizer::all_gather_chunk(int64_t size, int64_t c0, int64_t len) {
  const int world = comm_.world_size();
  const int me = comm_.rank();
  const FlatLayout& layout = shard_.layout;
  const at::TensorOptions options = shard_.params.front().options().requires_grad(false);
  auto copy_range = [&](int r, const at::Tensor& buffer, bool into_params) {
    const int64_t begin = r * size + c0;
    for (const ParamSegment& s : layout.segments_in(begin, begin + len)) {
      const FlatEntry& e = layout.entries[static_cast<size_t>(s.param)];
      at::Tensor flat_param = shard_.params[static_cast<size_t>(s.param)].detach().view({-1});
      at::Tensor part = buffer.narrow(0, e.offset + s.begin - begin, s.numel());
      if (into_params)
        flat_param.narrow(0, s.begin, s.numel()).copy_(part);
      else
        part.copy_(flat_param.narrow(0, s.begin, s.numel()));
    }
  };
  at::Tensor mine = at::zeros({len}, options);  // [len], padding stays zero
  copy_range(me, mine, false);
  std::vector<at::Tensor> outputs;
  const std::string what = "all-gather of updated parameters (elements " + std::to_string(c0) + " to " +
                           std::to_string(c0 + len) + " of each partition)";
  if (options_.allgather_partitions) {
    for (int r = 0; r < world; ++r) outputs.push_back(at::empty({len}, options));
    comm_.all_gather(mine, outputs, what);
    ++stats_.gather_collectives;
  } else {
    for (int r = 0; r < world; ++r) {
      std::vector<at::Tensor> one{r == me ? mine : at::empty({len}, options)};
      comm_.broadcast(one, r, what + " from rank " + std::to_string(r));
      outputs.push_back(one[0]);
      ++stats_.gather_collectives;
    }
  }
  for (int r = 0; r < world; ++r) {
    if (r == me) continue;
    copy_range(r, outputs[static_cast<size_t>(r)], true);
    stats_.gathered_bytes += tensor_bytes(outputs[static_cast<size_t>(r)]);
  }
}

void ZeroShardedOptimizer::save_state(const std::string& checkpoint_dir) {
  BERTH_BUG(ready_, "ZeroShardedOptimizer::save_state called before create()");
  std::vector<SegmentState> states;
  for (size_t i = 0; i < shard_.owned.size(); ++i) {
    SegmentState st;
    st.master = master_[i].detach().to(at::kCPU, at::kFloat).contiguous().clone();
    st.exp_avg = exp_avg_[i].detach().to(at::kCPU, at::kFloat).contiguous().clone();
    st.exp_avg_sq = exp_avg_sq_[i].detach().to(at::kCPU, at::kFloat).contiguous().clone();
    states.push_back(std::move(st));
  }
  ZeroShardInfo info;
  info.rank = comm_.rank();
  info.world_size = comm_.world_size();
  info.stage = options_.stage;
  info.step = step_count_;
  save_zero_shard(checkpoint_dir, shard_.layout, info, shard_.owned, states);
}

void ZeroShardedOptimizer::load_state(const std::string& checkpoint_dir, const std::string& placement,
                                      torch::nn::Module&) {
  BERTH_CHECK(ready_, "ZeRO: load_state before create. Fix: create the ",
              "optimizer first, then load its state");
  BERTH_CHECK(placement == "move" || placement == "strict", "ZeRO: placement '", placement,
              "' is not move or strict");
  const std::vector<ParamSegment>& owned = shard_.owned;
  int64_t step = 0;
  const std::vector<SegmentState> states = load_zero_segments(checkpoint_dir, shard_.layout, owned, &step);
  BERTH_BUG(states.size() == owned.size(), "load_zero_segments returned ", states.size(), " pieces for ",
            owned.size());
  torch::NoGradGuard no_grad;
  // The state goes where this rank keeps it (the master's device): ZeRO places its own state, so "strict"
  // has nothing a user could have misplaced.
  for (size_t i = 0; i < owned.size(); ++i) {
    BERTH_CHECK(
        states[i].master.numel() == owned[i].numel() && states[i].exp_avg.numel() == owned[i].numel() &&
            states[i].exp_avg_sq.numel() == owned[i].numel(),
        "ZeRO: the checkpoint's state of '", shard_.layout.entries[static_cast<size_t>(owned[i].param)].name,
        "' has the wrong length. Fix: resume with the model the checkpoint was written for");
    master_[i].copy_(states[i].master);
    exp_avg_[i].copy_(states[i].exp_avg);
    exp_avg_sq_[i].copy_(states[i].exp_avg_sq);
  }
  step_count_ = step;
  write_masters_to_parameters();
}

// Moments always; the master only where it is a copy rather than the parameter's own storage.
int64_t ZeroShardedOptimizer::state_bytes() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < master_.size(); ++i) {
    bytes += tensor_bytes(exp_avg_[i]) + tensor_bytes(exp_avg_sq_[i]);
    if (master_[i].data_ptr() != shard_.values(i).data_ptr()) bytes += tensor_bytes(master_[i]);
  }
  return bytes;
}

}  // namespace berth::dist
