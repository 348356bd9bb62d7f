// DdpGradientSync: bucketed all-reduce from gradient-accumulator hooks, as c10d's Reducer does it.
#include "berth/dist/ddp_gradient_sync.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <sstream>
#include <utility>

#include "berth/core/error.h"
#include "berth/dist/local_gradient_sync.h"
#include "berth/dist/model_signature.h"
#include "dist/broadcast_flat.h"
#include "dist/bucket_schedule.h"
#include "dist/gradient_hooks.h"

namespace berth::dist {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string device_text(const at::Tensor& t) { return t.device().str(); }

// The rows of a (V, H) gradient with any non-zero entry, ascending. A float32 CPU table is scanned once at
// memory speed (torch's ne(0).any(1) takes ~8x longer for a 30522 x 256 table on one thread), ORing each
// row's magnitude bits so that -0.0 counts as zero, as it compares.
std::vector<int64_t> nonzero_rows(const at::Tensor& grad) {
  std::vector<int64_t> rows;
  if (grad.device().is_cpu() && grad.scalar_type() == at::kFloat && grad.is_contiguous()) {
    const int64_t n = grad.size(0), width = grad.size(1);
    const auto* bits = reinterpret_cast<const uint32_t*>(grad.data_ptr<float>());
    for (int64_t row = 0; row < n; ++row) {
      const uint32_t* values = bits + row * width;
      uint32_t any = 0;
      for (int64_t j = 0; j < width; ++j) any |= values[j] & 0x7fffffffu;
      if (any != 0) rows.push_back(row);
    }
    return rows;
  }
  const at::Tensor found = grad.ne(0).any(1).nonzero().view({-1}).to(at::kCPU).contiguous();
  rows.assign(found.data_ptr<int64_t>(), found.data_ptr<int64_t>() + found.numel());
  return rows;
}

}  // namespace

struct DdpGradientSync::Slot {
  std::string name;
  at::Tensor param;
  int64_t offset = 0;     // into its bucket's flat buffer
  bool repeated = false;  // the hook fired twice after one begin_backward(true)
};

struct DdpGradientSync::RowSparse {
  std::string name;
  at::Tensor param;       // (V, H)
  int64_t last_rows = 0;  // rows of the last step's union, for time_communication_alone
};

struct DdpGradientSync::Bucket {
  at::Tensor flat;               // [numel (+1 unused-parameter flag)]
  int64_t numel = 0;             // gradient elements, without the flag
  bool has_unused_flag = false;  // the last bucket carries how many ranks miss a gradient
  at::Tensor inverse_world;      // 1 / world_size, made once rather than at every hook
  std::unique_ptr<PendingWork> work;
};

namespace {

std::shared_ptr<Communicator> require_communicator(std::shared_ptr<Communicator> comm) {
  BERTH_CHECK(comm != nullptr, "DdpGradientSync needs a communicator, found none. Fix: pass the one ",
              "berth::dist::init_communicator returned");
  return comm;
}

}  // namespace

DdpGradientSync::DdpGradientSync(std::shared_ptr<Communicator> comm, DdpOptions options)
    : comm_(require_communicator(std::move(comm))),
      options_(options),
      optimizer_(*this, *comm_),
      schedule_(std::make_unique<BucketSchedule>()),
      hooks_(std::make_unique<GradientHooks>()) {
  BERTH_CHECK(options_.bucket_cap_mb > 0, "DDP bucket_cap_mb must be positive, found ",
              options_.bucket_cap_mb, ". Fix: pass a size in MiB such as 25");
}

DdpGradientSync::~DdpGradientSync() { release_model(); }

void DdpGradientSync::release_model() {
  // Work in flight writes into the buckets' buffers: let it land before they go.
  for (Bucket& bucket : buckets_) {
    if (!bucket.work) continue;
    try {
      bucket.work->wait();
    } catch (...) {  // nobody to report it to; the collective's own error went to whoever waited
    }
  }
  hooks_->remove();
  slots_.clear();
  buckets_.clear();
  schedule_->clear();
  row_sparse_.clear();
  armed_ = false;
  prepared_ = false;
}

int64_t DdpGradientSync::parameter_bytes(torch::nn::Module& model) const {
  return whole_parameter_bytes(model);
}

void DdpGradientSync::prepare(torch::nn::Module& model) {
  // The Trainer prepares again for every train() and every search trial, each with a fresh model: the
  // previous model's hooks and buckets go first.
  release_model();
  check_agreement(*comm_, model_signature(model), "model structure (parameters and buffers)");
  broadcast_rank0_model(*comm_, model, options_.broadcast_buffers);
  build_buckets(bucketed_parameters(model));
  std::vector<at::Tensor> params;
  std::vector<std::string> names;
  for (const Slot& slot : slots_) {
    params.push_back(slot.param);
    names.push_back(slot.name);
  }
  hooks_->install(params, names, [this](size_t slot_index) { on_grad_ready(slot_index); });
  prepared_ = true;
}

// The trainable parameters that travel in buckets, in reverse parameter order: backward produces the last
// layers' gradients first, so the first bucket fills (and starts travelling) while earlier layers are still
// being differentiated. Large embedding tables go to row_sparse_ instead.
std::vector<std::pair<std::string, at::Tensor>> DdpGradientSync::bucketed_parameters(
    torch::nn::Module& model) {
  std::vector<const c10::TensorImpl*> tables;  // large embedding weights, reduced by rows
  if (options_.row_sparse_min_rows > 0)
    for (const auto& module : model.modules())
      if (const auto* embedding = dynamic_cast<const torch::nn::EmbeddingImpl*>(module.get()))
        if (embedding->weight.dim() == 2 && embedding->weight.size(0) >= options_.row_sparse_min_rows)
          tables.push_back(embedding->weight.unsafeGetTensorImpl());
  std::vector<std::pair<std::string, at::Tensor>> trainable;
  for (const auto& item : model.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    if (std::find(tables.begin(), tables.end(), item.value().unsafeGetTensorImpl()) != tables.end())
      row_sparse_.push_back(RowSparse{item.key(), item.value()});
    else
      trainable.emplace_back(item.key(), item.value());
  }
  std::reverse(trainable.begin(), trainable.end());
  return trainable;
}

// Slots in `trainable`'s order, in buckets of at most bucket_cap_mb of one dtype and device.
void DdpGradientSync::build_buckets(const std::vector<std::pair<std::string, at::Tensor>>& trainable) {
  std::vector<at::Tensor> params;
  for (const auto& [name, param] : trainable) {
    BERTH_CHECK(
        param.is_leaf(), "DDP parameter '", name,
        "' is not a leaf tensor, so it has no gradient accumulator to hook. Fix: register parameters ",
        "as leaves (torch::nn::Module::register_parameter)");
    BERTH_CHECK(!param.is_sparse(), "DDP parameter '", name, "' is sparse; berth's DDP handles dense ",
                "parameters only");
    params.push_back(param);
    slots_.push_back(Slot{name, param});
  }
  std::vector<size_t> order(params.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const auto cap_bytes = static_cast<int64_t>(options_.bucket_cap_mb * 1024.0 * 1024.0);
  std::vector<std::vector<size_t>> groups = group_into_buckets(
      params, order, cap_bytes,
      [](const at::Tensor& p) { return p.numel() * static_cast<int64_t>(p.element_size()); });

  buckets_.resize(groups.size());
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& bucket = buckets_[i];
    for (size_t s : groups[i]) {
      slots_[s].offset = bucket.numel;
      bucket.numel += slots_[s].param.numel();
    }
    const at::Tensor& first = slots_[groups[i].front()].param;
    // Without find_unused_parameters the last bucket to travel carries one more element: 1 from every rank
    // that missed a gradient. Its sum tells every rank, in the same collective, that the step must fail.
    bucket.has_unused_flag = !options_.find_unused_parameters && i + 1 == buckets_.size();
    bucket.flat = at::zeros({bucket.numel + (bucket.has_unused_flag ? 1 : 0)}, first.options());
    bucket.inverse_world = at::scalar_tensor(1.0 / static_cast<double>(comm_->world_size()), first.options());
  }
  schedule_->assign(std::move(groups), slots_.size());
}

void DdpGradientSync::start_round() {
  schedule_->restart();
  for (Slot& slot : slots_) slot.repeated = false;
}

void DdpGradientSync::begin_backward(bool last_micro_step) {
  BERTH_CHECK(prepared_, "DdpGradientSync::begin_backward before prepare(model). Fix: call prepare once, ",
              "after the model is placed");
  for (size_t i = 0; i < buckets_.size(); ++i)
    BERTH_CHECK(!buckets_[i].work, "DDP: begin_backward(", last_micro_step ? "true" : "false",
                ") while gradient bucket ", i,
                " of the previous last micro-step is still being all-reduced. ",
                "Fix: call finish_gradients after the backward that ends an accumulation");
  armed_ = last_micro_step;
  if (!armed_) return;
  start_round();
  // The flag still holds last step's sum; a bucket launched from a hook must carry this rank's 0.
  if (!buckets_.empty() && buckets_.back().has_unused_flag)
    buckets_.back().flat[buckets_.back().numel].zero_();
}

void DdpGradientSync::copy_into_bucket(size_t slot_index) {
  const Slot& slot = slots_[slot_index];
  const at::Tensor& grad = slot.param.grad();
  Bucket& bucket = buckets_[schedule_->bucket_of(slot_index)];
  at::Tensor view = bucket.flat.narrow(0, slot.offset, slot.param.numel()).view(slot.param.sizes());
  // Scaled by 1 / world on the way in (during backward, where it hides), so the all-reduced sum is the mean.
  if (grad.defined())
    at::mul_out(view, grad, bucket.inverse_world);
  else
    view.zero_();
}

// Runs on the autograd thread right after the parameter's gradient was accumulated.
void DdpGradientSync::on_grad_ready(size_t slot_index) {
  if (!armed_) return;  // a no_sync micro-step, or a backward outside the Trainer's step
  Slot& slot = slots_[slot_index];
  if (schedule_->ready(slot_index)) {
    slot.repeated = true;
    return;
  }
  if (!slot.param.grad().defined()) return;
  copy_into_bucket(slot_index);
  if (schedule_->mark_ready(slot_index))
    schedule_->launch_ready_in_order([this](size_t bucket) { launch(bucket, /*in_backward=*/true); });
}

void DdpGradientSync::launch(size_t bucket_index, bool in_backward) {
  Bucket& bucket = buckets_[bucket_index];
  std::vector<at::Tensor> tensors{bucket.flat};
  bucket.work =
      comm_->all_reduce_sum_async(tensors, "all-reduce of gradient bucket " + std::to_string(bucket_index));
  (in_backward ? stats_.buckets_launched_in_backward : stats_.buckets_launched_in_finish) += 1;
  stats_.all_reduce_bytes += bucket.flat.numel() * static_cast<int64_t>(bucket.flat.element_size());
}

void DdpGradientSync::finish_gradients(const std::vector<at::Tensor>& params) {
  BERTH_CHECK(prepared_, "DdpGradientSync::finish_gradients before prepare(model). Fix: call prepare once, ",
              "after the model is placed");
  if (!armed_) start_round();  // no begin_backward(true) for this step: nothing was launched, all go now
  armed_ = false;

  std::vector<std::string> repeated;
  for (const Slot& slot : slots_)
    if (slot.repeated) repeated.push_back(slot.name);
  const std::vector<size_t> missing = fill_missing_gradients();
  // Only a bucket not yet launched may be written; when the last one is in flight, no gradient was missing.
  if (!buckets_.empty() && buckets_.back().has_unused_flag && !schedule_->launched(buckets_.size() - 1))
    buckets_.back().flat[buckets_.back().numel].fill_(missing.empty() ? 0.0 : 1.0);

  bool row_sparse_missing = false;
  communicate_rest(row_sparse_missing);
  check_row_sparse_gradients(row_sparse_missing);
  check_bucket_gradients(missing);
  use_buckets_as_gradients();

  BERTH_CHECK(repeated.empty(), "DDP: the gradient of '", repeated.front(), "'",
              repeated.size() > 1 ? " (and " : "",
              repeated.size() > 1 ? std::to_string(repeated.size() - 1) + " more)" : "",
              " was accumulated by two backward passes after one begin_backward(true), after its bucket may ",
              "already have been sent. Fix: call begin_backward before every backward");
  check_known_parameters(params);
}

// The slots whose hook did not fire in the last backward go into their buckets now; returns those with no
// gradient at all on this rank.
std::vector<size_t> DdpGradientSync::fill_missing_gradients() {
  std::vector<size_t> missing;
  schedule_->fill_missing([&](size_t slot_index) {
    // Not accumulated in the last backward: either a gradient from an earlier micro-step (no_sync) or none.
    if (!slots_[slot_index].param.grad().defined()) missing.push_back(slot_index);
    copy_into_bucket(slot_index);
  });
  return missing;
}

// Launches the buckets not launched in backward, reduces the embedding tables' rows while they travel, and
// waits for everything.
void DdpGradientSync::communicate_rest(bool& row_sparse_missing) {
  const auto start = std::chrono::steady_clock::now();
  schedule_->launch_ready_in_order([this](size_t bucket) { launch(bucket, /*in_backward=*/false); });
  std::exception_ptr failure;
  try {
    reduce_row_sparse(row_sparse_missing);
  } catch (...) {
    failure = std::current_exception();
  }
  for (Bucket& bucket : buckets_) {
    try {
      if (bucket.work) bucket.work->wait();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
    bucket.work.reset();
  }
  stats_.exposed_comm_seconds += seconds_since(start);
  ++stats_.steps;
  if (failure) std::rethrow_exception(failure);
}

void DdpGradientSync::check_row_sparse_gradients(bool any_rank_missing) const {
  if (!any_rank_missing || options_.find_unused_parameters) return;
  std::string names;
  for (const RowSparse& table : row_sparse_)
    if (!table.param.grad().defined()) names += (names.empty() ? "" : ", ") + table.name;
  BERTH_FAIL("DDP: ",
             names.empty() ? "on another rank an embedding table got no gradient in this step"
                           : "the embedding table(s) " + names + " got no gradient in this step on rank " +
                                 std::to_string(comm_->rank()),
             ". DDP expects a gradient for every trainable parameter on every rank. Fix: pass "
             "find_unused_parameters=true (--ddp-find-unused-parameters), or make every parameter take part "
             "in the loss");
}

// The unused-parameter flag's sum: how many ranks missed a gradient of some bucketed parameter.
void DdpGradientSync::check_bucket_gradients(const std::vector<size_t>& missing) const {
  if (buckets_.empty() || !buckets_.back().has_unused_flag) return;
  const double ranks_missing = buckets_.back().flat[buckets_.back().numel].item<double>();
  if (ranks_missing <= 0.5) return;
  std::ostringstream names;
  for (size_t k = 0; k < missing.size() && k < 5; ++k) names << (k ? ", " : "") << slots_[missing[k]].name;
  if (missing.size() > 5) names << " (and " << missing.size() - 5 << " more)";
  const std::string fix =
      "Fix: pass find_unused_parameters=true (--ddp-find-unused-parameters), or make every parameter take "
      "part in the loss";
  if (missing.empty())
    BERTH_FAIL("DDP: on ", static_cast<int64_t>(ranks_missing + 0.5), " other rank(s) some trainable ",
               "parameters got no gradient in this step (their error names them); every parameter must have ",
               "a gradient on every rank. ", fix);
  BERTH_FAIL("DDP: ", missing.size(),
             " trainable parameter(s) got no gradient in this step's backward on rank ", comm_->rank(), ": ",
             names.str(), ". DDP expects a gradient for every trainable parameter on ", "every rank. ", fix);
}

// Each gradient becomes a view of its bucket (torch DDP's gradient_as_bucket_view): no copy back after the
// all-reduce. The next step's hook copies a fresh gradient in again (or onto itself, when the caller kept the
// gradients instead of resetting them to none).
void DdpGradientSync::use_buckets_as_gradients() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    slot.param.mutable_grad() = buckets_[schedule_->bucket_of(i)]
                                    .flat.narrow(0, slot.offset, slot.param.numel())
                                    .view(slot.param.sizes());
  }
  // The step's peak: every gradient exists now, and the step frees them. The unused-parameter flag is no
  // gradient.
  gradient_bytes_ = 0;
  for (const Bucket& bucket : buckets_)
    gradient_bytes_ += bucket.numel * static_cast<int64_t>(bucket.flat.element_size());
  for (const RowSparse& table : row_sparse_) gradient_bytes_ += tensor_bytes(table.param.grad());
}

// The Trainer passes its own list; a parameter DDP never saw would silently stay local.
void DdpGradientSync::check_known_parameters(const std::vector<at::Tensor>& params) const {
  for (const at::Tensor& p : params) {
    if (!p.requires_grad()) continue;
    const bool known =
        std::any_of(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.param.is_same(p); }) ||
        std::any_of(row_sparse_.begin(), row_sparse_.end(),
                    [&](const RowSparse& t) { return t.param.is_same(p); });
    BERTH_CHECK(known, "DDP: finish_gradients got a parameter of shape ", p.sizes(),
                " that was not in the model given to prepare(), so its gradient would not be averaged. Fix: ",
                "prepare the DdpGradientSync with the model whose parameters are optimized");
  }
}

std::vector<DdpBucketInfo> DdpGradientSync::buckets() const {
  std::vector<DdpBucketInfo> out;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const Bucket& bucket = buckets_[b];
    DdpBucketInfo info;
    for (size_t s : schedule_->slots(b)) info.param_names.push_back(slots_[s].name);
    info.numel = bucket.numel;
    info.dtype = c10::toString(bucket.flat.scalar_type());
    info.device = device_text(bucket.flat);
    out.push_back(std::move(info));
  }
  return out;
}

// Each table's gradient rows that are non-zero on some rank, summed over ranks and averaged: the rows no rank
// touched are zero on every rank, so this is the dense mean at a fraction of the bytes. Every rank takes part
// in both collectives even without a gradient (it then sends no rows and a "missing" mark).
void DdpGradientSync::reduce_row_sparse(bool& any_rank_missing) {
  const double world = static_cast<double>(comm_->world_size());
  for (RowSparse& table : row_sparse_) {
    const at::Tensor& param = table.param;
    const bool missing = !param.grad().defined();
    std::vector<int64_t> payload{missing ? 1 : 0};  // [missing, rows...]
    if (!missing) {
      const std::vector<int64_t> rows = nonzero_rows(param.grad());
      payload.insert(payload.end(), rows.begin(), rows.end());
    }
    const std::string bytes(reinterpret_cast<const char*>(payload.data()), payload.size() * sizeof(int64_t));
    const auto parts = comm_->all_gather_string(bytes, "exchange of the touched rows of " + table.name);
    std::vector<char> touched(static_cast<size_t>(param.size(0)), 0);
    for (const std::string& part : parts) {
      const auto* values = reinterpret_cast<const int64_t*>(part.data());
      const size_t n = part.size() / sizeof(int64_t);
      if (n > 0 && values[0] != 0) any_rank_missing = true;
      for (size_t i = 1; i < n; ++i) touched[static_cast<size_t>(values[i])] = 1;
    }
    std::vector<int64_t> union_rows;
    for (size_t row = 0; row < touched.size(); ++row)
      if (touched[row]) union_rows.push_back(static_cast<int64_t>(row));
    const at::Tensor index =
        at::tensor(union_rows, at::TensorOptions().dtype(at::kLong)).to(param.device());  // (U,)
    if (missing) param.mutable_grad() = at::zeros_like(param);
    std::vector<at::Tensor> values{param.grad().index_select(0, index)};  // (U, H)
    comm_->all_reduce_sum(values, "all-reduce of the touched rows of " + table.name);
    param.mutable_grad().index_copy_(0, index, values[0].div_(world));
    table.last_rows = static_cast<int64_t>(union_rows.size());
    stats_.row_sparse_rows += table.last_rows;
    stats_.row_sparse_dense_rows += param.size(0);
    stats_.all_reduce_bytes += values[0].numel() * static_cast<int64_t>(values[0].element_size());
  }
}

double DdpGradientSync::time_communication_alone() {
  BERTH_BUG(prepared_, "DdpGradientSync::time_communication_alone called before prepare(model)");
  for (const Bucket& bucket : buckets_)
    BERTH_BUG(!bucket.work,
              "DdpGradientSync::time_communication_alone called during a step (only between steps)");
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<PendingWork>> works;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    std::vector<at::Tensor> tensors{buckets_[i].flat};
    works.push_back(
        comm_->all_reduce_sum_async(tensors, "timed all-reduce of gradient bucket " + std::to_string(i)));
  }
  // The tables as the last step sent them: the row exchange and the rows' all-reduce.
  for (const RowSparse& table : row_sparse_) {
    const std::string rows(static_cast<size_t>(table.last_rows + 1) * sizeof(int64_t), '\0');
    comm_->all_gather_string(rows, "timed exchange of the touched rows of " + table.name);
    std::vector<at::Tensor> values{at::zeros({table.last_rows, table.param.size(1)}, table.param.options())};
    comm_->all_reduce_sum(values, "timed all-reduce of the touched rows of " + table.name);
  }
  for (auto& work : works) work->wait();
  return seconds_since(start);
}

}  // namespace berth::dist
