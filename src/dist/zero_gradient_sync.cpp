// ZeroGradientSync: ZeRO stages 1-3 over c10d; every rank owns a list of parameter pieces, reduces gradients
// into them in buckets, steps AdamW on them and shares the updated values.
#include "berth/dist/zero_gradient_sync.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "berth/core/error.h"
#include "berth/dist/model_signature.h"
#include "berth/dist/zero3_parameters.h"
#include "berth/dist/zero_checkpoint.h"
#include "berth/optim/adamw_kernel.h"
#include "dist/broadcast_flat.h"
#include "dist/bucket_schedule.h"
#include "dist/gradient_hooks.h"

namespace berth::dist {

namespace {

void check_offload(const OffloadOptions& offload, const std::string& name) {
  BERTH_CHECK(offload.device == "none" || offload.device == "cpu", "ZeRO: ", name, ".device '",
              offload.device,
              "' is not supported: berth offloads to \"cpu\" or not at all (\"none\"). Fix: set ", name,
              ".device to \"cpu\" or \"none\"");
}

bool fusable(const at::Tensor& p, const at::Tensor& g, const at::Tensor& m, const at::Tensor& v) {
  for (const at::Tensor* t : {&p, &g, &m, &v})
    if (!t->device().is_cpu() || t->scalar_type() != at::kFloat || !t->is_contiguous()) return false;
  return g.numel() == p.numel() && m.numel() == p.numel() && v.numel() == p.numel();
}

int64_t bytes_of(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

}  // namespace

void validate_zero_options(const ZeroOptions& o) {
  BERTH_CHECK(
      o.stage >= 1 && o.stage <= 3, "ZeRO: stage ", o.stage,
      " is not a ZeRO stage berth runs: expected 1 (optimizer state sharded), 2 (+ gradients) or 3 (+ ",
      "parameters)", o.stage == 0 ? "; stage 0 means no ZeRO" : "",
      ". Fix: set zero_optimization.stage to 1, 2 or 3 (or leave ZeRO off for DDP)");
  BERTH_CHECK(o.reduce_bucket_size > 0,
              "ZeRO: reduce_bucket_size must be a positive number of elements, found ", o.reduce_bucket_size,
              ". Fix: e.g. 500000000 (DeepSpeed's default)");
  BERTH_CHECK(o.allgather_bucket_size > 0,
              "ZeRO: allgather_bucket_size must be a positive number of elements, found ",
              o.allgather_bucket_size, ". Fix: e.g. 500000000 (DeepSpeed's default)");
  BERTH_CHECK(o.stage3_prefetch_bucket_size >= 0, "ZeRO: stage3_prefetch_bucket_size must be >= 0, found ",
              o.stage3_prefetch_bucket_size, ". Fix: e.g. 50000000 (DeepSpeed's default)");
  BERTH_CHECK(o.stage3_param_persistence_threshold >= 0,
              "ZeRO: stage3_param_persistence_threshold must be >= 0, found ",
              o.stage3_param_persistence_threshold, ". Fix: e.g. 100000 (DeepSpeed's default)");
  check_offload(o.offload_optimizer, "offload_optimizer");
  check_offload(o.offload_param, "offload_param");
  BERTH_CHECK(!o.offload_param.enabled() || o.stage == 3, "ZeRO: offload_param needs stage 3 (only stage 3 ",
              "partitions parameters), found stage ", o.stage,
              ". Fix: set zero_optimization.stage to 3, or drop offload_param (offload_optimizer works with ",
              "every stage)");
}

// A parameter's elements [begin, end) owned by `owner`, at `offset` in its bucket's buffer.
struct ZeroGradientSync::Piece {
  int64_t begin = 0;
  int64_t end = 0;
  int owner = 0;
  int64_t offset = 0;
  int64_t owned_index = -1;  // index into owned_ when this rank owns it
};

struct ZeroGradientSync::Slot {
  std::string name;
  at::Tensor param;
  std::vector<Piece> pieces;  // every owner's pieces of this parameter
};

struct ZeroGradientSync::Bucket {
  std::vector<std::tuple<int, int64_t, int64_t>> owners;  // (rank, begin, end) in the buffer, ascending rank
  int64_t numel = 0;
  at::TensorOptions options;
  at::Tensor flat;                 // [numel], allocated while the bucket is in use
  at::Tensor inverse_world;        // 1 / world_size
  std::vector<at::Tensor> slices;  // what the collectives hold
  std::vector<std::unique_ptr<PendingWork>> works;
};

ZeroGradientSync::ZeroGradientSync(std::shared_ptr<Communicator> comm, ZeroOptions options)
    : comm_(std::move(comm)),
      options_(std::move(options)),
      schedule_(std::make_unique<BucketSchedule>()),
      hooks_(std::make_unique<GradientHooks>()) {
  BERTH_CHECK(comm_ != nullptr, "ZeroGradientSync needs a communicator, found none. Fix: pass the one ",
              "berth::dist::init_communicator returned (make_local_communicator() for one process)");
  validate_zero_options(options_);
}

ZeroGradientSync::~ZeroGradientSync() {
  try {
    release_model();
  } catch (...) {  // a destructor reports nothing; a collective's own error went to whoever waited
  }
}

void ZeroGradientSync::release_model() {
  for (Bucket& bucket : buckets_)
    for (auto& work : bucket.works) {
      try {
        work->wait();
      } catch (...) {
      }
    }
  hooks_->remove();
  if (partitioned_) partitioned_->unpartition();
  partitioned_.reset();
  slots_.clear();
  buckets_.clear();
  schedule_->clear();
  params_.clear();
  owned_.clear();
  owned_offset_.clear();
  owned_numel_ = 0;
  grad_partition_ = at::Tensor();
  master_.clear();
  exp_avg_.clear();
  exp_avg_sq_.clear();
  weight_decay_.clear();
  optimizer_ready_ = prepared_ = armed_ = callback_queued_ = reduced_this_step_ = have_gradients_ = false;
}

ZeroStats ZeroGradientSync::stats() const {
  ZeroStats out = stats_;
  if (partitioned_) out.gathered_bytes += partitioned_->stats().gathered_bytes;
  return out;
}

void ZeroGradientSync::prepare(torch::nn::Module& model) {
  release_model();
  check_agreement(*comm_, model_signature(model), "model structure (parameters and buffers)");
  check_agreement(*comm_, {{"strategy", strategy()}}, "ZeRO stage");
  broadcast_rank0_model(*comm_, model, /*buffers=*/true);

  std::vector<std::string> names;
  for (const auto& item : model.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    const at::Tensor& p = item.value();
    BERTH_CHECK(p.is_leaf(), "ZeRO parameter '", item.key(), "' is not a leaf tensor, so it has no gradient ",
                "accumulator to hook. Fix: register parameters as leaves (register_parameter)");
    BERTH_CHECK(
        p.is_contiguous() && !p.is_sparse(), "ZeRO parameter '", item.key(),
        "' is not a dense contiguous tensor; ZeRO lays parameters end to end. Fix: make it contiguous ",
        "(param.data() = param.contiguous()) before prepare");
    names.push_back(item.key());
    params_.push_back(p);
  }
  BERTH_CHECK(!params_.empty(), "ZeRO: the model has no trainable parameters. Fix: leave requires_grad on ",
              "the parameters to train");
  layout_ = make_flat_layout(names, params_);
  const int world = comm_->world_size();
  const int me = comm_->rank();

  // Who owns what, for every rank: each bucket lays out every owner's pieces.
  std::vector<std::vector<ParamSegment>> all_owned(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    if (options_.stage == 3) {
      all_owned[r] = per_parameter_partition(layout_, r, world, options_.stage3_param_persistence_threshold);
    } else {
      const auto [begin, end] = layout_.partition(r, world);
      all_owned[r] = layout_.segments_in(begin, end);
    }
  }
  // Slots and their pieces (every owner's), then buckets of whole parameters in reverse order.
  for (size_t i = 0; i < params_.size(); ++i) {
    Slot slot;
    slot.name = names[i];
    slot.param = params_[i];
    slots_.push_back(std::move(slot));
  }
  for (int r = 0; r < world; ++r)
    for (size_t k = 0; k < all_owned[r].size(); ++k) {
      const ParamSegment& s = all_owned[r][k];
      Piece piece;
      piece.begin = s.begin;
      piece.end = s.end;
      piece.owner = r;
      piece.owned_index = r == me ? static_cast<int64_t>(k) : -1;
      slots_[static_cast<size_t>(s.param)].pieces.push_back(piece);
    }
  build_buckets();
  hooks_->install(params_, names, [this](size_t slot_index) { on_grad_ready(slot_index); });
  // Stage 3 partitions only now: a gradient accumulator records its parameter's shape when it is made, and
  // the hooks above made them while every parameter was whole.
  if (options_.stage == 3) {
    partitioned_ = std::make_unique<PartitionedParameters>(comm_, options_);
    partitioned_->partition(model, layout_);
    owned_ = partitioned_->owned_segments();
    BERTH_BUG(owned_ == all_owned[me], "stage 3's partition disagrees with per_parameter_partition on rank ",
              me);
  } else {
    owned_ = all_owned[me];
  }
  for (const ParamSegment& s : owned_) {
    owned_offset_.push_back(owned_numel_);
    owned_numel_ += s.numel();
  }

  // Stages 2-3 reduce every micro-step's gradients from the hooks; stage 1 only when begin_backward says so.
  armed_ = options_.stage >= 2;
  prepared_ = true;
}

// Buckets of whole parameters in reverse layout order (backward's order), reduce_bucket_size elements at
// most.
void ZeroGradientSync::build_buckets() {
  const int world = comm_->world_size();
  const std::vector<at::Tensor>& params = params_;
  std::vector<size_t> order;
  for (size_t k = params.size(); k-- > 0;) order.push_back(k);
  std::vector<std::vector<size_t>> groups = group_into_buckets(params, order, options_.reduce_bucket_size,
                                                               [](const at::Tensor& p) { return p.numel(); });
  buckets_.resize(groups.size());
  // Inside a bucket, owner by owner: each owner's share is one contiguous range (one reduce per owner).
  for (size_t b = 0; b < groups.size(); ++b) {
    Bucket& bucket = buckets_[b];
    bucket.options = params[groups[b].front()].options();
    for (int r = 0; r < world; ++r) {
      const int64_t start = bucket.numel;
      for (size_t s : groups[b])
        for (Piece& piece : slots_[s].pieces)
          if (piece.owner == r) {
            piece.offset = bucket.numel;
            bucket.numel += piece.end - piece.begin;
          }
      if (bucket.numel > start) bucket.owners.emplace_back(r, start, bucket.numel);
    }
    bucket.inverse_world = at::scalar_tensor(1.0 / static_cast<double>(world), bucket.options);
  }
  schedule_->assign(std::move(groups), slots_.size());
}

void ZeroGradientSync::begin_backward(bool last_micro_step) {
  BERTH_CHECK(prepared_, "ZeroGradientSync::begin_backward before prepare(model). Fix: call prepare ",
              "once, after the model is placed");
  callback_queued_ = false;
  if (options_.stage == 1) {
    // Stage 1 keeps whole gradients until the step: only the backward that ends an accumulation can send
    // them during backward (overlap_comm); the others accumulate locally as one process does.
    armed_ = last_micro_step && options_.overlap_comm;
    if (last_micro_step) reduced_this_step_ = false;
  }
  schedule_->restart();
}

void ZeroGradientSync::copy_into_bucket(size_t slot_index) {
  Slot& slot = slots_[slot_index];
  Bucket& bucket = buckets_[schedule_->bucket_of(slot_index)];
  if (!bucket.flat.defined()) bucket.flat = at::empty({bucket.numel}, bucket.options);
  at::Tensor& grad = slot.param.mutable_grad();
  const at::Tensor flat_grad = grad.defined() ? grad.reshape({-1}) : at::Tensor();  // [numel]
  for (const Piece& piece : slot.pieces) {
    at::Tensor view = bucket.flat.narrow(0, piece.offset, piece.end - piece.begin);
    // Scaled by 1 / world on the way in (as DDP does), so the reduced sum is the mean.
    if (flat_grad.defined())
      at::mul_out(view, flat_grad.narrow(0, piece.begin, piece.end - piece.begin), bucket.inverse_world);
    else
      view.zero_();
  }
  // Stages 2-3 keep no whole gradient: it lives on in its bucket until reduced into the owner's partition.
  if (options_.stage >= 2) grad.reset();
}

void ZeroGradientSync::on_grad_ready(size_t slot_index) {
  if (!armed_) return;
  if (!slots_[slot_index].param.grad().defined()) return;
  if (!callback_queued_) {
    // The buckets of parameters that got no gradient must still leave, and in flight ones must land before
    // the next micro-step reuses the buffers: at the end of this backward.
    torch::autograd::Engine::get_default_engine().queue_callback([this] { end_of_backward(); });
    callback_queued_ = true;
  }
  if (schedule_->ready(slot_index)) {
    add_repeated_gradient(slot_index);
    return;
  }
  copy_into_bucket(slot_index);
  if (schedule_->mark_ready(slot_index)) launch_ready_buckets_in_order(/*in_backward=*/true);
}

// A second backward into the same micro-step (retain_graph): its gradient joins the bucket only if the bucket
// has not left yet; otherwise it waits for the next reduction.
void ZeroGradientSync::add_repeated_gradient(size_t slot_index) {
  const size_t bucket_index = schedule_->bucket_of(slot_index);
  if (schedule_->launched(bucket_index)) return;
  Slot& slot = slots_[slot_index];
  Bucket& bucket = buckets_[bucket_index];
  const at::Tensor flat_grad = slot.param.grad().reshape({-1});  // [numel]
  for (const Piece& piece : slot.pieces)
    bucket.flat.narrow(0, piece.offset, piece.end - piece.begin)
        .add_(flat_grad.narrow(0, piece.begin, piece.end - piece.begin) * bucket.inverse_world);
  if (options_.stage >= 2) slot.param.mutable_grad().reset();
}

void ZeroGradientSync::launch_ready_buckets_in_order(bool in_backward) {
  schedule_->launch_ready_in_order([this, in_backward](size_t bucket) { launch(bucket, in_backward); });
}

void ZeroGradientSync::launch(size_t bucket_index, bool in_backward) {
  Bucket& bucket = buckets_[bucket_index];
  const std::string what = "reduction of gradient bucket " + std::to_string(bucket_index);
  if (options_.reduce_scatter && comm_->world_size() > 1) {
    // The Communicator has no reduce-scatter: one reduce per owner of its contiguous share.
    for (const auto& [owner, begin, end] : bucket.owners) {
      bucket.slices.push_back(bucket.flat.narrow(0, begin, end - begin));
      bucket.works.push_back(comm_->reduce_sum_async(bucket.slices.back(), owner, what));
      ++stats_.reduce_collectives;
    }
  } else {
    bucket.slices.push_back(bucket.flat);
    bucket.works.push_back(comm_->all_reduce_sum_async(bucket.slices, what));
    ++stats_.reduce_collectives;
  }
  ++stats_.reductions;
  if (in_backward) ++stats_.buckets_launched_in_backward;
  stats_.reduced_bytes += bytes_of(bucket.flat);
  if (!options_.overlap_comm) {
    complete(bucket_index);  // DeepSpeed's non-overlapped path: the reduction blocks where it starts
    return;
  }
  // Double buffering: at most two buckets in flight, so stage 2's transient gradient memory stays at about
  // two buckets rather than the whole model.
  for (size_t earlier = 0; earlier + 1 < bucket_index; ++earlier)
    if (!buckets_[earlier].works.empty()) complete(earlier);
}

// Waits for the bucket's collectives and adds this rank's share into the gradient partition.
void ZeroGradientSync::complete(size_t bucket_index) {
  Bucket& bucket = buckets_[bucket_index];
  std::exception_ptr failure;
  for (auto& work : bucket.works) {
    try {
      work->wait();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  bucket.works.clear();
  bucket.slices.clear();
  if (failure) std::rethrow_exception(failure);
  ensure_grad_partition();
  torch::NoGradGuard no_grad;
  for (size_t s : schedule_->slots(bucket_index))
    for (const Piece& piece : slots_[s].pieces) {
      if (piece.owned_index < 0) continue;
      const int64_t n = piece.end - piece.begin;
      grad_partition_.narrow(0, owned_offset_[static_cast<size_t>(piece.owned_index)], n)
          .add_(bucket.flat.narrow(0, piece.offset, n).to(grad_partition_.device(), at::kFloat));
    }
  have_gradients_ = true;
  bucket.flat = at::Tensor();  // the transient buffer goes back to the allocator
}

void ZeroGradientSync::ensure_grad_partition() {
  if (grad_partition_.defined()) return;
  const c10::Device device =
      options_.offload_optimizer.enabled() ? c10::Device(c10::kCPU) : params_.front().device();
  grad_partition_ = at::zeros({owned_numel_}, at::TensorOptions().dtype(at::kFloat).device(device));
}

void ZeroGradientSync::complete_all() {
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (!buckets_[b].works.empty()) complete(b);
}

void ZeroGradientSync::end_of_backward() {
  callback_queued_ = false;
  // Parameters whose hook did not fire count as zero (or, stage 1, as what earlier micro-steps accumulated).
  schedule_->fill_missing([this](size_t slot_index) { copy_into_bucket(slot_index); });
  launch_ready_buckets_in_order(/*in_backward=*/false);
  complete_all();
  if (options_.stage == 1) {
    reduced_this_step_ = true;
    armed_ = false;
  }
  schedule_->restart();
}

void ZeroGradientSync::reduce_all_now() {
  schedule_->restart();
  schedule_->fill_missing([this](size_t slot_index) { copy_into_bucket(slot_index); });
  launch_ready_buckets_in_order(/*in_backward=*/false);
  complete_all();
  schedule_->restart();
}

void ZeroGradientSync::finish_gradients(const std::vector<at::Tensor>& params) {
  BERTH_CHECK(prepared_, "ZeroGradientSync::finish_gradients before prepare(model). Fix: call ",
              "prepare once, after the model is placed");
  if (options_.stage == 1 && !reduced_this_step_) {
    reduce_all_now();
    reduced_this_step_ = true;
  }
  complete_all();
  ensure_grad_partition();
  const std::vector<at::Tensor>& known_params = params_;
  for (const at::Tensor& p : params) {
    if (!p.requires_grad()) continue;
    const bool known = std::any_of(known_params.begin(), known_params.end(),
                                   [&](const at::Tensor& q) { return q.is_same(p); });
    BERTH_CHECK(known, "ZeRO: finish_gradients got a parameter of shape ", p.sizes(),
                " that was not in the model given to prepare(), so nobody owns its optimizer state. Fix: ",
                "prepare the ZeroGradientSync with the model whose parameters are optimized");
  }
}

at::Tensor ZeroGradientSync::owned_gradient(size_t i) const {
  BERTH_CHECK(i < owned_.size(), "ZeRO: piece ", i, " does not exist (this rank owns ", owned_.size(), ")");
  BERTH_CHECK(grad_partition_.defined(), "ZeRO: no gradients reduced yet");
  return grad_partition_.narrow(0, owned_offset_[i], owned_[i].numel());
}
at::Tensor ZeroGradientSync::master(size_t i) const { return master_.at(i); }
at::Tensor ZeroGradientSync::exp_avg(size_t i) const { return exp_avg_.at(i); }
at::Tensor ZeroGradientSync::exp_avg_sq(size_t i) const { return exp_avg_sq_.at(i); }

void ZeroGradientSync::create(torch::nn::Module&, const OptimizerSpec& spec) {
  BERTH_CHECK(prepared_, "ZeroGradientSync::create before prepare(model). Fix: prepare first");
  const optim::AdamWOptions& adam = spec.adam;
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
  std::map<std::string, double> decay;
  for (size_t g = 0; g < spec.groups.size(); ++g) {
    const optim::NamedParamGroup& group = spec.groups[g];
    BERTH_CHECK(group.names.size() == group.params.size(), "AdamW: param group ", g, " has ",
                group.names.size(), " names but ", group.params.size(), " params. Fix: give one name per ",
                "parameter");
    BERTH_CHECK(group.weight_decay >= 0, "AdamW: param group ", g, " has weight_decay ", group.weight_decay,
                ", expected >= 0");
    for (const std::string& name : group.names)
      BERTH_CHECK(decay.emplace(name, group.weight_decay).second, "AdamW: parameter '", name,
                  "' is in more than one param group. Fix: put each parameter in one group");
  }
  master_.clear();
  exp_avg_.clear();
  exp_avg_sq_.clear();
  weight_decay_.clear();
  separate_master_ = false;
  step_count_ = 0;
  const bool offload = options_.offload_optimizer.enabled();
  for (size_t i = 0; i < owned_.size(); ++i) {
    const ParamSegment& s = owned_[i];
    const auto it = decay.find(layout_.entries[static_cast<size_t>(s.param)].name);
    weight_decay_.push_back(it == decay.end() ? -1.0 : it->second);
    const at::Tensor source = partitioned_ ? partitioned_->owned_piece(i)
                                           : params_[static_cast<size_t>(s.param)].detach().view({-1}).narrow(
                                                 0, s.begin, s.numel());  // [numel]
    at::Tensor master;
    if (!offload && source.scalar_type() == at::kFloat && source.is_contiguous()) {
      master = source;  // the parameter's own storage: no copy
    } else {
      const bool pin = offload && options_.offload_optimizer.pin_memory && params_.front().is_cuda();
      const c10::Device device = offload ? c10::Device(c10::kCPU) : source.device();
      master =
          at::empty({s.numel()}, at::TensorOptions().dtype(at::kFloat).device(device).pinned_memory(pin));
      master.copy_(source);
      separate_master_ = true;
    }
    exp_avg_.push_back(at::zeros_like(master));
    exp_avg_sq_.push_back(at::zeros_like(master));
    master_.push_back(master);
  }
  optimizer_ready_ = true;
}

void ZeroGradientSync::set_lr(double lr) {
  BERTH_CHECK(lr >= 0, "AdamW: lr must be >= 0, found ", lr, ". Fix: pass a learning rate >= 0");
  lr_ = lr;
}

void ZeroGradientSync::reset_gradients(const std::vector<at::Tensor>& params) {
  for (const at::Tensor& p : params_)
    if (p.grad().defined()) const_cast<at::Tensor&>(p).mutable_grad().reset();
  for (const at::Tensor& p : params)
    if (p.grad().defined()) const_cast<at::Tensor&>(p).mutable_grad().reset();
  if (grad_partition_.defined()) {
    if (options_.contiguous_gradients)
      grad_partition_.zero_();  // one buffer for the whole run
    else
      grad_partition_ = at::Tensor();  // allocated again by the next reduction
  }
  have_gradients_ = false;
  reduced_this_step_ = false;
}

void ZeroGradientSync::zero_grad(const std::vector<at::Tensor>& params) { reset_gradients(params); }

StepResult ZeroGradientSync::step(const std::vector<at::Tensor>& params, const StepOptions& options) {
  BERTH_CHECK(optimizer_ready_, "ZeroGradientSync::step before create. Fix: call ",
              "optimizer().create(model, spec) after prepare(model)");
  if (options.lr) set_lr(*options.lr);
  finish_gradients(params);
  torch::NoGradGuard no_grad;
  StepResult result;
  if (options.loss_scale != 1) grad_partition_.div_(options.loss_scale);
  // The global norm: every rank's owned pieces together cover each parameter element exactly once.
  double sum_squares = 0;
  if (owned_numel_ > 0) {
    const double local =
        at::linalg_vector_norm(grad_partition_, 2, c10::nullopt, false, at::kDouble).item<double>();
    sum_squares = local * local;
  }
  result.grad_norm = std::sqrt(comm_->all_reduce_sum(sum_squares, "global gradient norm"));
  if (!std::isfinite(result.grad_norm) && options.skip_on_overflow) {
    result.overflow = true;
    reset_gradients(params);
    return result;
  }
  if (options.max_grad_norm > 0) {
    // clip_grad_norm's coefficient, in float as torch computes it from a float norm.
    const float total = static_cast<float>(result.grad_norm);
    const float coef = static_cast<float>(options.max_grad_norm) * (1.0f / (total + 1e-6f));
    if (!(coef >= 1.0f)) grad_partition_.mul_(coef);
  }

  ++step_count_;
  const double bias_correction1 = 1 - std::pow(beta1_, static_cast<double>(step_count_));
  const double bias_correction2 = 1 - std::pow(beta2_, static_cast<double>(step_count_));
  const double step_size = lr_ / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  for (size_t i = 0; i < owned_.size(); ++i) {
    const double weight_decay = weight_decay_[i];
    if (weight_decay < 0) continue;  // in no param group: not optimized (as AdamW)
    at::Tensor& p = master_[i];
    at::Tensor g = owned_gradient(i);
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
  ++stats_.steps;
  write_masters_to_parameters();
  reset_gradients(params);
  return result;
}

// Owned pieces -> the parameters every rank uses (copies where the master is separate), then the world's
// share: stages 1-2 all-gather the partitions, stage 3 lets PartitionedParameters refresh what it keeps
// whole.
void ZeroGradientSync::write_masters_to_parameters() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < owned_.size() && i < master_.size(); ++i) {
    const ParamSegment& s = owned_[i];
    at::Tensor target = partitioned_ ? partitioned_->owned_piece(i)
                                     : params_[static_cast<size_t>(s.param)].detach().view({-1}).narrow(
                                           0, s.begin, s.numel());
    if (!target.is_same(master_[i]) && target.data_ptr() != master_[i].data_ptr()) target.copy_(master_[i]);
  }
  if (partitioned_)
    partitioned_->after_step();
  else
    all_gather_parameters();
}

void ZeroGradientSync::all_gather_parameters() {
  const int world = comm_->world_size();
  if (world == 1) return;
  const int me = comm_->rank();
  const int64_t size = layout_.padded_numel(world) / world;  // every partition's length
  const at::TensorOptions options = params_.front().options().requires_grad(false);
  for (int64_t c0 = 0; c0 < size; c0 += options_.allgather_bucket_size) {
    const int64_t len = std::min(options_.allgather_bucket_size, size - c0);
    auto copy_range = [&](int r, const at::Tensor& buffer, bool into_params) {
      const int64_t begin = r * size + c0;
      for (const ParamSegment& s : layout_.segments_in(begin, begin + len)) {
        const FlatEntry& e = layout_.entries[static_cast<size_t>(s.param)];
        at::Tensor flat_param = params_[static_cast<size_t>(s.param)].detach().view({-1});
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
      comm_->all_gather(mine, outputs, what);
      ++stats_.gather_collectives;
    } else {
      for (int r = 0; r < world; ++r) {
        std::vector<at::Tensor> one{r == me ? mine : at::empty({len}, options)};
        comm_->broadcast(one, r, what + " from rank " + std::to_string(r));
        outputs.push_back(one[0]);
        ++stats_.gather_collectives;
      }
    }
    for (int r = 0; r < world; ++r) {
      if (r == me) continue;
      copy_range(r, outputs[static_cast<size_t>(r)], true);
      stats_.gathered_bytes += bytes_of(outputs[static_cast<size_t>(r)]);
    }
  }
  for (const at::Tensor& p : params_) p.unsafeGetTensorImpl()->bump_version();
}

void ZeroGradientSync::save_state(const std::string& checkpoint_dir) {
  BERTH_CHECK(optimizer_ready_, "ZeRO: save_state before create");
  std::vector<SegmentState> states;
  for (size_t i = 0; i < owned_.size(); ++i) {
    SegmentState st;
    st.master = master_[i].detach().to(at::kCPU, at::kFloat).contiguous().clone();
    st.exp_avg = exp_avg_[i].detach().to(at::kCPU, at::kFloat).contiguous().clone();
    st.exp_avg_sq = exp_avg_sq_[i].detach().to(at::kCPU, at::kFloat).contiguous().clone();
    states.push_back(std::move(st));
  }
  ZeroShardInfo info;
  info.rank = comm_->rank();
  info.world_size = comm_->world_size();
  info.stage = options_.stage;
  info.step = step_count_;
  save_zero_shard(checkpoint_dir, layout_, info, owned_, states);
}

void ZeroGradientSync::load_state(const std::string& checkpoint_dir, const std::string& placement,
                                  torch::nn::Module&) {
  BERTH_CHECK(optimizer_ready_, "ZeRO: load_state before create. Fix: create the ",
              "optimizer first, then load its state");
  BERTH_CHECK(placement == "move" || placement == "strict", "ZeRO: placement '", placement,
              "' is not move or strict");
  int64_t step = 0;
  const std::vector<SegmentState> states = load_zero_segments(checkpoint_dir, layout_, owned_, &step);
  BERTH_BUG(states.size() == owned_.size(), "load_zero_segments returned ", states.size(), " pieces for ",
            owned_.size());
  torch::NoGradGuard no_grad;
  // The state goes where this rank keeps it (the master's device): ZeRO places its own state, so "strict"
  // has nothing a user could have misplaced.
  for (size_t i = 0; i < owned_.size(); ++i) {
    BERTH_CHECK(
        states[i].master.numel() == owned_[i].numel() && states[i].exp_avg.numel() == owned_[i].numel() &&
            states[i].exp_avg_sq.numel() == owned_[i].numel(),
        "ZeRO: the checkpoint's state of '", layout_.entries[static_cast<size_t>(owned_[i].param)].name,
        "' has the wrong length. Fix: resume with the model the checkpoint was written for");
    master_[i].copy_(states[i].master);
    exp_avg_[i].copy_(states[i].exp_avg);
    exp_avg_sq_[i].copy_(states[i].exp_avg_sq);
  }
  step_count_ = step;
  write_masters_to_parameters();
}

void ZeroGradientSync::gather() {
  if (partitioned_) partitioned_->gather_all();
}

void ZeroGradientSync::release() {
  if (partitioned_) partitioned_->release_all();
}

int64_t ZeroGradientSync::parameter_bytes(torch::nn::Module& model) const {
  int64_t frozen_bytes = 0;
  for (const at::Tensor& p : model.parameters())
    if (!p.requires_grad()) frozen_bytes += bytes_of(p);
  if (partitioned_) return partitioned_->held_parameter_bytes() + frozen_bytes;
  int64_t full = 0;  // stages 1-2 keep every parameter whole
  for (const FlatEntry& e : layout_.entries)
    full += e.numel * static_cast<int64_t>(params_[&e - layout_.entries.data()].element_size());
  return full + frozen_bytes;
}

int64_t ZeroGradientSync::gradient_bytes() const {
  if (options_.stage > 1) return owned_numel_ * 4;
  int64_t trainable_bytes = 0;
  for (const at::Tensor& p : params_) trainable_bytes += bytes_of(p);
  return trainable_bytes;
}

int64_t ZeroGradientSync::state_bytes() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < master_.size(); ++i) {
    bytes += bytes_of(exp_avg_[i]) + bytes_of(exp_avg_sq_[i]);
    const ParamSegment& s = owned_[i];
    const bool is_view = partitioned_ ? master_[i].data_ptr() == partitioned_->owned_piece(i).data_ptr()
                                      : master_[i].data_ptr() == params_[static_cast<size_t>(s.param)]
                                                                     .detach()
                                                                     .view({-1})
                                                                     .narrow(0, s.begin, s.numel())
                                                                     .data_ptr();
    if (!is_view) bytes += bytes_of(master_[i]);
  }
  return bytes;
}

}  // namespace berth::dist
