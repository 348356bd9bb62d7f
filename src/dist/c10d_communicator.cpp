// C10dCommunicator: berth's collectives on a c10d process group: lists of tensors flattened into one buffer,
// strings as padded byte tensors, and every c10d exception reported through CollectiveFailure.
#include "dist/c10d_communicator.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include "berth/core/error.h"
#include "dist/collective_failure.h"

namespace berth::dist {
namespace {

// Several tensors travel as one flat buffer: c10d's list arguments mean one tensor per device, not a bucket.
bool needs_flattening(const std::vector<at::Tensor>& tensors) {
  return tensors.size() != 1 || !tensors[0].is_contiguous();
}

at::Tensor flatten(const std::vector<at::Tensor>& tensors, const std::string& what) {
  BERTH_BUG(!tensors.empty(), what, ": a collective over no tensors; every caller passes at least one");
  for (const at::Tensor& t : tensors) {
    BERTH_CHECK(t.scalar_type() == tensors[0].scalar_type() && t.device() == tensors[0].device(), what,
                ": all tensors of one collective must share dtype and device; found ",
                tensors[0].scalar_type(), " on ", tensors[0].device(), " and ", t.scalar_type(), " on ",
                t.device());
  }
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

void unflatten(const at::Tensor& flat, std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (at::Tensor& t : tensors) {
    const int64_t n = t.numel();
    t.copy_(flat.narrow(0, offset, n).view(t.sizes()));
    offset += n;
  }
}

class C10dWork : public PendingWork {
 public:
  C10dWork(std::shared_ptr<const CollectiveFailure> failures, c10::intrusive_ptr<c10d::Work> work,
           std::string what, at::Tensor flat, std::vector<at::Tensor> targets)
      : failures_(std::move(failures)),
        work_(std::move(work)),
        what_(std::move(what)),
        flat_(std::move(flat)),
        targets_(std::move(targets)) {}

  void wait() override {
    if (!work_) return;
    const c10::intrusive_ptr<c10d::Work> work = std::move(work_);
    failures_->wait(*work, what_);
    if (flat_.defined()) unflatten(flat_, targets_);
  }

 private:
  std::shared_ptr<const CollectiveFailure> failures_;
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
  at::Tensor flat_;
  std::vector<at::Tensor> targets_;
};

class C10dCommunicator : public Communicator {
 public:
  C10dCommunicator(c10::intrusive_ptr<compat::C10dBackend> group, c10::intrusive_ptr<c10d::Store> store,
                   int rank, int world, std::string backend, c10::Device device, FailureTimes times,
                   std::vector<std::string> who)
      : group_(std::move(group)),
        device_(device),
        failures_(std::make_shared<const CollectiveFailure>(
            FailureContext{"", rank, world, std::move(backend), times, std::move(who)}, std::move(store))) {}

  ~C10dCommunicator() override {
    // A group whose wait gave up on a stopped peer is left behind, never destroyed: its destructor would join
    // a worker thread blocked on that peer until the collective timeout (30 minutes by default).
    if (failures_->abandoned()) (void)group_.release();
    // The heartbeat stops before the group goes, so a clean exit never reads as a crash for long.
    failures_.reset();
  }

  int rank() const override { return failures_->context().rank; }
  int world_size() const override { return failures_->context().world; }
  std::string backend_name() const override { return failures_->context().backend; }
  c10::Device device() const override { return device_; }

  void all_reduce_sum(std::vector<at::Tensor>& tensors, const std::string& what) override {
    all_reduce_sum_async(tensors, what)->wait();
  }

  std::unique_ptr<PendingWork> all_reduce_sum_async(std::vector<at::Tensor>& tensors,
                                                    const std::string& what) override {
    const bool flat_path = needs_flattening(tensors);
    at::Tensor flat = flat_path ? flatten(tensors, what) : at::Tensor();
    std::vector<at::Tensor> args = flat_path ? std::vector<at::Tensor>{flat} : tensors;
    c10::intrusive_ptr<c10d::Work> work;
    try {
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      work = group_->allreduce(args, opts);
    } catch (const std::exception& e) {
      failures_->fail(what, e);
    }
    return std::make_unique<C10dWork>(failures_, std::move(work), what, flat,
                                      flat_path ? tensors : std::vector<at::Tensor>{});
  }

  void broadcast(std::vector<at::Tensor>& tensors, int root, const std::string& what) override {
    check_root(root, what);
    const bool flat_path = needs_flattening(tensors);
    at::Tensor flat = flat_path ? flatten(tensors, what) : at::Tensor();
    std::vector<at::Tensor> args = flat_path ? std::vector<at::Tensor>{flat} : tensors;
    c10::intrusive_ptr<c10d::Work> work;
    try {
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      work = group_->broadcast(args, opts);
    } catch (const std::exception& e) {
      failures_->fail(what, e);
    }
    C10dWork(failures_, std::move(work), what, flat, flat_path ? tensors : std::vector<at::Tensor>{}).wait();
  }

  void barrier(const std::string& what) override {
    // A one-element all-reduce rather than c10d's barrier: NCCL's barrier guesses a GPU from the rank, and
    // Gloo's gives the same guarantee at the same cost.
    std::vector<at::Tensor> token{at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device_))};
    all_reduce_sum(token, what);
  }

  std::vector<std::string> all_gather_string(const std::string& value, const std::string& what) override {
    const int world = world_size();
    // Lengths first (allgather needs equal sizes), then the bytes padded to the longest.
    std::vector<at::Tensor> lengths{at::zeros({world}, at::TensorOptions().dtype(at::kLong).device(device_))};
    lengths[0][rank()].fill_(static_cast<int64_t>(value.size()));
    all_reduce_sum(lengths, what + " (string lengths)");
    const at::Tensor cpu_lengths = lengths[0].cpu();
    const int64_t* len = cpu_lengths.data_ptr<int64_t>();
    const int64_t longest = std::max<int64_t>(1, *std::max_element(len, len + world));

    at::Tensor mine = at::zeros({longest}, at::TensorOptions().dtype(at::kByte));
    std::copy(value.begin(), value.end(), mine.data_ptr<uint8_t>());
    std::vector<at::Tensor> inputs{mine.to(device_)};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < world; ++r) outputs[0].push_back(at::empty_like(inputs[0]));
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = group_->allgather(outputs, inputs);
    } catch (const std::exception& e) {
      failures_->fail(what, e);
    }
    failures_->wait(*work, what);
    std::vector<std::string> result;
    for (int r = 0; r < world; ++r) {
      const at::Tensor bytes = outputs[0][r].cpu();
      const auto* p = reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>());
      result.emplace_back(p, static_cast<size_t>(len[r]));
    }
    return result;
  }

  std::unique_ptr<PendingWork> reduce_sum_async(at::Tensor& tensor, int root,
                                                const std::string& what) override {
    check_root(root, what);
    BERTH_CHECK(tensor.is_contiguous(), what, ": reduce needs a contiguous tensor");
    std::vector<at::Tensor> args{tensor};
    c10::intrusive_ptr<c10d::Work> work;
    try {
      c10d::ReduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      opts.rootRank = root;
      work = group_->reduce(args, opts);
    } catch (const std::exception& e) {
      failures_->fail(what, e);
    }
    return std::make_unique<C10dWork>(failures_, std::move(work), what, at::Tensor(),
                                      std::vector<at::Tensor>{});
  }

  void all_gather(const at::Tensor& input, std::vector<at::Tensor>& outputs,
                  const std::string& what) override {
    BERTH_CHECK(static_cast<int>(outputs.size()) == world_size(), what, ": all_gather needs ", world_size(),
                " outputs, found ", outputs.size());
    std::vector<at::Tensor> inputs{input.contiguous()};
    std::vector<std::vector<at::Tensor>> lists(1);
    for (size_t r = 0; r < outputs.size(); ++r) lists[0].push_back(at::empty_like(inputs[0]));
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = group_->allgather(lists, inputs);
    } catch (const std::exception& e) {
      failures_->fail(what, e);
    }
    failures_->wait(*work, what);
    for (size_t r = 0; r < outputs.size(); ++r) outputs[r].copy_(lists[0][r].view(outputs[r].sizes()));
  }

  std::string broadcast_string(const std::string& value, int root, const std::string& what) override {
    check_root(root, what);
    std::vector<at::Tensor> length{at::full({1}, rank() == root ? static_cast<int64_t>(value.size()) : 0,
                                            at::TensorOptions().dtype(at::kLong).device(device_))};
    broadcast(length, root, what + " (string length)");
    const int64_t n = length[0].cpu().item<int64_t>();
    if (n == 0) return "";
    at::Tensor bytes = at::zeros({n}, at::TensorOptions().dtype(at::kByte));
    if (rank() == root) std::copy(value.begin(), value.end(), bytes.data_ptr<uint8_t>());
    std::vector<at::Tensor> args{bytes.to(device_)};
    broadcast(args, root, what);
    const at::Tensor out = args[0].cpu();
    return std::string(reinterpret_cast<const char*>(out.data_ptr<uint8_t>()), static_cast<size_t>(n));
  }

 private:
  void check_root(int root, const std::string& what) const {
    BERTH_CHECK(root >= 0 && root < world_size(), what, ": broadcast root ", root, " is not a rank of this ",
                world_size(), "-rank run (ranks 0 to ", world_size() - 1, ")");
  }

  c10::intrusive_ptr<compat::C10dBackend> group_;
  c10::Device device_;
  std::shared_ptr<const CollectiveFailure> failures_;
};

}  // namespace

std::shared_ptr<Communicator> make_c10d_communicator(c10::intrusive_ptr<compat::C10dBackend> group,
                                                     c10::intrusive_ptr<c10d::Store> store, int rank,
                                                     int world, std::string backend, c10::Device device,
                                                     FailureTimes times, std::vector<std::string> who) {
  return std::make_shared<C10dCommunicator>(std::move(group), std::move(store), rank, world,
                                            std::move(backend), device, times, std::move(who));
}

}  // namespace berth::dist
