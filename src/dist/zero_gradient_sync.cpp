// ZeroGradientSync: ZeRO stages 1-3 over c10d; every rank owns a list of parameter pieces and reduces
// gradients into them in buckets (its ZeroShardedOptimizer steps them and shares the updated values).
#include "berth/dist/zero_gradient_sync.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/torch.h>

#include <algorithm>
#include <utility>

#include "berth/core/error.h"
#include "berth/dist/model_signature.h"
#include "berth/dist/replica_optimizer.h"
#include "dist/broadcast_flat.h"
#include "dist/bucket_schedule.h"
#include "dist/gradient_hooks.h"
#include "dist/zero_shard.h"
#include "dist/zero_sharded_optimizer.h"

namespace berth::dist {

namespace {

void check_offload(const OffloadOptions& offload, const std::string& name) {
  BERTH_CHECK(offload.device == "none" || offload.device == "cpu", "ZeRO: ", name, ".device '",
              offload.device,
              "' is not supported: berth offloads to \"cpu\" or not at all (\"none\"). Fix: set ", name,
              ".device to \"cpu\" or \"none\"");
}

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
  int64_t owned_index = -1;  // index into the shard's owned pieces when this rank owns it
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
      shard_(std::make_unique<ZeroShard>()),
      schedule_(std::make_unique<BucketSchedule>()),
      hooks_(std::make_unique<GradientHooks>()) {
  BERTH_CHECK(comm_ != nullptr, "ZeroGradientSync needs a communicator, found none. Fix: pass the one ",
              "berth::dist::init_communicator returned (make_local_communicator() for one process)");
  validate_zero_options(options_);
  optimizer_ = std::make_unique<ZeroShardedOptimizer>(*this, *shard_, *comm_, options_);
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
  shard_->clear();
  slots_.clear();
  buckets_.clear();
  schedule_->clear();
  optimizer_->reset();
  armed_ = callback_queued_ = false;
}

ShardedOptimizer& ZeroGradientSync::optimizer() { return *optimizer_; }

ZeroStats ZeroGradientSync::stats() const {
  ZeroStats out = stats_;
  const ZeroStats& stepped = optimizer_->stats();
  out.steps = stepped.steps;
  out.gather_collectives = stepped.gather_collectives;
  out.gathered_bytes = stepped.gathered_bytes;
  if (shard_->partitioned) out.gathered_bytes += shard_->partitioned->stats().gathered_bytes;
  return out;
}

void ZeroGradientSync::prepare(torch::nn::Module& model) {
  release_model();
  check_agreement(*comm_, model_signature(model), "model structure (parameters and buffers)");
  check_agreement(*comm_, {{"strategy", strategy()}}, "ZeRO stage");
  broadcast_rank0_model(*comm_, model, /*buffers=*/true);

  const std::vector<std::string> names = collect_trainable(model);
  shard_->layout = make_flat_layout(names, shard_->params);
  // Who owns what, for every rank: each bucket lays out every owner's pieces.
  const std::vector<std::vector<ParamSegment>> all_owned = every_ranks_pieces();
  build_slots(names, all_owned);
  build_buckets();
  hooks_->install(shard_->params, names, [this](size_t slot_index) { on_grad_ready(slot_index); });
  // Stage 3 partitions only now: a gradient accumulator records its parameter's shape when it is made, and
  // the hooks above made them while every parameter was whole.
  take_ownership(model, all_owned[static_cast<size_t>(comm_->rank())]);

  // Stages 2-3 reduce every micro-step's gradients from the hooks; stage 1 only when begin_backward says so.
  armed_ = options_.stage >= 2;
  shard_->prepared = true;
}

// The trainable parameters into the shard, in named_parameters() order; returns their names.
std::vector<std::string> ZeroGradientSync::collect_trainable(torch::nn::Module& model) {
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
    shard_->params.push_back(p);
  }
  BERTH_CHECK(!shard_->params.empty(), "ZeRO: the model has no trainable parameters. Fix: leave ",
              "requires_grad on the parameters to train");
  return names;
}

// Rank r's pieces at [r]: stages 1-2 its contiguous partition of the flat array, stage 3 a piece of every
// parameter.
std::vector<std::vector<ParamSegment>> ZeroGradientSync::every_ranks_pieces() const {
  const int world = comm_->world_size();
  const FlatLayout& layout = shard_->layout;
  std::vector<std::vector<ParamSegment>> all_owned(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    if (options_.stage == 3) {
      all_owned[r] = per_parameter_partition(layout, r, world, options_.stage3_param_persistence_threshold);
    } else {
      const auto [begin, end] = layout.partition(r, world);
      all_owned[r] = layout.segments_in(begin, end);
    }
  }
  return all_owned;
}

// One slot per trainable parameter, with every owner's pieces of it.
void ZeroGradientSync::build_slots(const std::vector<std::string>& names,
                                   const std::vector<std::vector<ParamSegment>>& owned) {
  const int me = comm_->rank();
  for (size_t i = 0; i < shard_->params.size(); ++i) slots_.push_back(Slot{names[i], shard_->params[i], {}});
  for (int r = 0; r < static_cast<int>(owned.size()); ++r)
    for (size_t k = 0; k < owned[r].size(); ++k) {
      const ParamSegment& s = owned[r][k];
      Piece piece;
      piece.begin = s.begin;
      piece.end = s.end;
      piece.owner = r;
      piece.owned_index = r == me ? static_cast<int64_t>(k) : -1;
      slots_[static_cast<size_t>(s.param)].pieces.push_back(piece);
    }
}

// Buckets of whole parameters in reverse layout order (backward's order), reduce_bucket_size elements at
// most.
void ZeroGradientSync::build_buckets() {
  const int world = comm_->world_size();
  const std::vector<at::Tensor>& params = shard_->params;
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

// This rank's pieces and their offsets into the reduced gradients; stage 3 partitions the model first.
void ZeroGradientSync::take_ownership(torch::nn::Module& model, const std::vector<ParamSegment>& expected) {
  ZeroShard& shard = *shard_;
  if (options_.stage == 3) {
    shard.partitioned = std::make_unique<PartitionedParameters>(comm_, options_);
    shard.partitioned->partition(model, shard.layout);
    shard.owned = shard.partitioned->owned_segments();
    BERTH_BUG(shard.owned == expected, "stage 3's partition disagrees with per_parameter_partition on rank ",
              comm_->rank());
  } else {
    shard.owned = expected;
  }
  for (const ParamSegment& s : shard.owned) {
    shard.owned_offset.push_back(shard.owned_numel);
    shard.owned_numel += s.numel();
  }
}

void ZeroGradientSync::begin_backward(bool last_micro_step) {
  BERTH_CHECK(shard_->prepared, "ZeroGradientSync::begin_backward before prepare(model). Fix: call prepare ",
              "once, after the model is placed");
  callback_queued_ = false;
  if (options_.stage == 1) {
    // Stage 1 keeps whole gradients until the step: only the backward that ends an accumulation can send
    // them during backward (overlap_comm); the others accumulate locally as one process does.
    armed_ = last_micro_step && options_.overlap_comm;
    if (last_micro_step) shard_->reduced = false;
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
  stats_.reduced_bytes += tensor_bytes(bucket.flat);
  if (!options_.overlap_comm) {
    complete(bucket_index);  // DeepSpeed's non-overlapped path: the reduction blocks where it starts
    return;
  }
  // Double buffering: at most two buckets in flight, so stage 2's transient gradient memory stays at about
  // two buckets rather than the whole model.
  for (size_t earlier = 0; earlier + 1 < bucket_index; ++earlier)
    if (!buckets_[earlier].works.empty()) complete(earlier);
}

// Waits for the bucket's collectives and adds this rank's share into the shard's gradients.
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
  ZeroShard& shard = *shard_;
  shard.ensure_gradients(options_.offload_optimizer.enabled());
  torch::NoGradGuard no_grad;
  for (size_t s : schedule_->slots(bucket_index))
    for (const Piece& piece : slots_[s].pieces) {
      if (piece.owned_index < 0) continue;
      const int64_t n = piece.end - piece.begin;
      shard.gradients.narrow(0, shard.owned_offset[static_cast<size_t>(piece.owned_index)], n)
          .add_(bucket.flat.narrow(0, piece.offset, n).to(shard.gradients.device(), at::kFloat));
    }
  bucket.flat = at::Tensor();  // the transient buffer goes back to the allocator
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
    shard_->reduced = true;
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
  BERTH_CHECK(shard_->prepared, "ZeroGradientSync::finish_gradients before prepare(model). Fix: call ",
              "prepare once, after the model is placed");
  if (options_.stage == 1 && !shard_->reduced) {
    reduce_all_now();
    shard_->reduced = true;
  }
  complete_all();
  shard_->ensure_gradients(options_.offload_optimizer.enabled());
  const std::vector<at::Tensor>& known_params = shard_->params;
  for (const at::Tensor& p : params) {
    if (!p.requires_grad()) continue;
    const bool known = std::any_of(known_params.begin(), known_params.end(),
                                   [&](const at::Tensor& q) { return q.is_same(p); });
    BERTH_CHECK(known, "ZeRO: finish_gradients got a parameter of shape ", p.sizes(),
                " that was not in the model given to prepare(), so nobody owns its optimizer state. Fix: ",
                "prepare the ZeroGradientSync with the model whose parameters are optimized");
  }
}

void ZeroGradientSync::zero_grad(const std::vector<at::Tensor>& params) {
  shard_->drop_gradients(params, options_.contiguous_gradients);
}

int64_t ZeroGradientSync::gradient_bytes() const {
  if (options_.stage > 1) return shard_->owned_numel * 4;
  int64_t trainable_bytes = 0;
  for (const at::Tensor& p : shard_->params) trainable_bytes += tensor_bytes(p);
  return trainable_bytes;
}

void ZeroGradientSync::gather() {
  if (shard_->partitioned) shard_->partitioned->gather_all();
}

void ZeroGradientSync::release() {
  if (shard_->partitioned) shard_->partitioned->release_all();
}

int64_t ZeroGradientSync::parameter_bytes(torch::nn::Module& model) const {
  int64_t frozen_bytes = 0;
  for (const at::Tensor& p : model.parameters())
    if (!p.requires_grad()) frozen_bytes += tensor_bytes(p);
  if (shard_->partitioned) return shard_->partitioned->held_parameter_bytes() + frozen_bytes;
  int64_t full = 0;  // stages 1-2 keep every parameter whole
  const FlatLayout& layout = shard_->layout;
  for (size_t i = 0; i < layout.entries.size(); ++i)
    full += layout.entries[i].numel * static_cast<int64_t>(shard_->params[i].element_size());
  return full + frozen_bytes;
}

const FlatLayout& ZeroGradientSync::layout() const { return shard_->layout; }
const std::vector<ParamSegment>& ZeroGradientSync::owned_segments() const { return shard_->owned; }
at::Tensor ZeroGradientSync::owned_gradient(size_t i) const { return shard_->gradient(i); }

// The optimizer's part, for tests and tools that hold a ZeroGradientSync.
void ZeroGradientSync::create(torch::nn::Module& model, const OptimizerSpec& spec) {
  optimizer_->create(model, spec);
}
StepResult ZeroGradientSync::step(const std::vector<at::Tensor>& params, const StepOptions& options) {
  return optimizer_->step(params, options);
}
void ZeroGradientSync::save_state(const std::string& checkpoint_dir) {
  optimizer_->save_state(checkpoint_dir);
}
void ZeroGradientSync::load_state(const std::string& checkpoint_dir, const std::string& placement,
                                  torch::nn::Module& model) {
  optimizer_->load_state(checkpoint_dir, placement, model);
}
int64_t ZeroGradientSync::state_bytes() const { return optimizer_->state_bytes(); }
void ZeroGradientSync::set_lr(double lr) { optimizer_->set_lr(lr); }
at::Tensor ZeroGradientSync::master(size_t i) const { return optimizer_->master(i); }
at::Tensor ZeroGradientSync::exp_avg(size_t i) const { return optimizer_->exp_avg(i); }
at::Tensor ZeroGradientSync::exp_avg_sq(size_t i) const { return optimizer_->exp_avg_sq(i); }
int64_t ZeroGradientSync::optimizer_step_count() const { return optimizer_->step_count(); }
double ZeroGradientSync::lr() const { return optimizer_->lr(); }

}  // namespace berth::dist
