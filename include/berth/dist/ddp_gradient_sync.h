// DdpGradientSync: DDP's gradient averaging, with bucketed all-reduces launched from autograd hooks.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "berth/dist/communicator.h"
#include "berth/dist/gradient_sync.h"
#include "berth/dist/replica_optimizer.h"

namespace berth::dist {

class BucketSchedule;
class GradientHooks;

struct DdpOptions {
  // Upper bound of one bucket's gradients; smaller buckets start communicating earlier in backward, larger
  // ones pay less per-collective overhead (torch DDP's default is 25).
  double bucket_cap_mb = 25;
  // false: a trainable parameter without a gradient after the last micro-step's backward is an error (it
  // usually means a forgotten branch). true: it counts as a zero gradient on this rank.
  bool find_unused_parameters = false;
  // torch DDP re-broadcasts buffers from rank 0 before every forward. berth broadcasts them once, in
  // prepare(): BERT's buffers (position_ids, token_type_ids) never change, so later broadcasts would only
  // cost time. false skips even that one broadcast of buffers.
  bool broadcast_buffers = true;
  // Word-embedding tables (torch::nn::Embedding with at least this many rows) travel as the rows some rank
  // touched, not as the whole table: a batch of 8 x 128 tokens touches ~3% of BERT's 30522 rows, and the
  // table is a fifth (bert-base) to two thirds (bert-mini) of all gradient bytes, the part that is ready last
  // and so cannot hide behind backward. The result is the same mean as the dense all-reduce (rows no rank
  // touched are zero everywhere). 0 turns it off.
  int64_t row_sparse_min_rows = 4096;
};

// Counters for the overlap benchmark, summed since construction (or reset_stats()).
struct DdpStats {
  int64_t steps = 0;                         // finish_gradients calls
  int64_t buckets_launched_in_backward = 0;  // all-reduces started by the hooks, overlapping backward
  int64_t buckets_launched_in_finish = 0;    // all-reduces started only in finish_gradients
  int64_t all_reduce_bytes = 0;              // bytes of every bucket all-reduced (this rank's side)
  int64_t row_sparse_rows = 0;        // embedding rows all-reduced (see DdpOptions::row_sparse_min_rows)
  int64_t row_sparse_dense_rows = 0;  // the rows the dense all-reduce would have sent
  double exposed_comm_seconds = 0;    // time finish_gradients spent waiting on communication
};

// One bucket of the layout, for reports and tests.
struct DdpBucketInfo {
  std::vector<std::string> param_names;  // in the order gradients become ready (reverse parameter order)
  int64_t numel = 0;
  std::string dtype;
  std::string device;
};

// The Trainer's GradientSync for data parallelism (torch DDP's Reducer, reduced to what berth needs):
//   prepare(model)     checks every rank has the same parameters and buffers (names, shapes, dtypes), copies
//                      rank 0's values to all ranks, lays trainable parameters into buckets of at most
//                      bucket_cap_mb (same dtype and device, reverse parameter order) and hooks each
//                      parameter's gradient accumulator. Called again (the Trainer's next train() or search
//                      trial, with a fresh model), it unhooks the previous model first.
//   begin_backward(b)  b == false: the coming backward is a no_sync micro-step (gradients accumulate
//                      locally, nothing travels). b == true: the hooks are armed; when the last gradient of a
//                      bucket is accumulated the bucket is all-reduced asynchronously while backward goes on.
//   finish_gradients   launches what is left, waits, and writes the world's mean into every param.grad().
// Every rank runs every bucket's all-reduce in the same order every step, whatever its own unused
// parameters, so one rank's missing gradient is an error on every rank rather than a hang.
// Its optimizer is a full replica on every rank and its parameters stay whole.
class DdpGradientSync final : public GradientSync, public GradientReducer, public ParameterResidency {
 public:
  DdpGradientSync(std::shared_ptr<Communicator> comm, DdpOptions options = {});
  ~DdpGradientSync() override;
  DdpGradientSync(const DdpGradientSync&) = delete;
  DdpGradientSync& operator=(const DdpGradientSync&) = delete;

  Communicator& communicator() override { return *comm_; }
  GradientReducer& reducer() override { return *this; }
  ShardedOptimizer& optimizer() override { return optimizer_; }
  ParameterResidency& residency() override { return *this; }
  std::string strategy() const override { return "ddp"; }

  void prepare(torch::nn::Module& model) override;
  void begin_backward(bool last_micro_step) override;
  void finish_gradients(const std::vector<at::Tensor>& params) override;
  // The buckets' gradients (every gradient is a view of one after finish_gradients; the last bucket's
  // unused-parameter flag is not counted) plus the embedding tables' gradients, which travel by rows.
  int64_t gradient_bytes() const override { return gradient_bytes_; }
  void gather() override {}
  void release() override {}
  int64_t parameter_bytes(torch::nn::Module& model) const override;

  // The replica's AdamW (nullptr before optimizer().create()).
  optim::AdamW* replica_optimizer() const { return optimizer_.adamw(); }

  const DdpOptions& options() const { return options_; }
  DdpStats stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  std::vector<DdpBucketInfo> buckets() const;
  // Communication alone: all-reduces every bucket once (all launched, then all awaited) with no backward to
  // hide behind, and returns the seconds it took. Collective (every rank calls it); call it between steps,
  // it overwrites the bucket buffers, which the parameters' gradients are views of after finish_gradients.
  // Not counted in stats().
  double time_communication_alone();

 private:
  struct Bucket;
  struct Slot;
  struct RowSparse;
  void release_model();
  std::vector<std::pair<std::string, at::Tensor>> bucketed_parameters(torch::nn::Module& model);
  void build_buckets(const std::vector<std::pair<std::string, at::Tensor>>& trainable);
  void start_round();
  void on_grad_ready(size_t slot_index);
  void copy_into_bucket(size_t slot_index);
  void launch(size_t bucket_index, bool in_backward);
  std::vector<size_t> fill_missing_gradients();
  void communicate_rest(bool& row_sparse_missing);
  void reduce_row_sparse(bool& any_rank_missing);
  void check_row_sparse_gradients(bool any_rank_missing) const;
  void check_bucket_gradients(const std::vector<size_t>& missing) const;
  void use_buckets_as_gradients();
  void check_known_parameters(const std::vector<at::Tensor>& params) const;

  std::shared_ptr<Communicator> comm_;
  DdpOptions options_;
  ReplicaOptimizer optimizer_;
  int64_t gradient_bytes_ = 0;
  bool prepared_ = false;
  bool armed_ = false;
  std::vector<Slot> slots_;                   // one per bucketed parameter, in bucket order
  std::vector<Bucket> buckets_;               // in launch order
  std::unique_ptr<BucketSchedule> schedule_;  // which slots are in which bucket, which are ready this step
  std::unique_ptr<GradientHooks> hooks_;      // one per slot
  std::vector<RowSparse> row_sparse_;  // embedding tables reduced by rows, after the buckets are launched
  DdpStats stats_;
};

}  // namespace berth::dist
