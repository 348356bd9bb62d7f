// ZeroGradientSync: ZeRO stages 1, 2 and 3 (DeepSpeed's zero_optimization) on c10d, with CPU offload of the
// optimizer: each rank owns a list of parameter pieces and keeps optimizer state (and, from stage 2,
// gradients; stage 3, parameters) only for those.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "berth/dist/communicator.h"
#include "berth/dist/flat_layout.h"
#include "berth/dist/gradient_sync.h"
#include "berth/dist/zero_options.h"

namespace berth::dist {

class BucketSchedule;
class GradientHooks;
class ZeroShardedOptimizer;
struct ZeroShard;

// Counters since construction, for benchmarks and tests (this rank's side of every collective).
struct ZeroStats {
  int64_t steps = 0;                         // optimizer steps taken (skipped overflow steps excluded)
  int64_t reductions = 0;                    // gradient buckets reduced (every micro-step from stage 2 on)
  int64_t buckets_launched_in_backward = 0;  // of those, launched from an autograd hook during backward
  int64_t reduce_collectives = 0;            // c10d calls: one all-reduce, or one reduce per owner, a bucket
  int64_t reduced_bytes = 0;                 // gradient bytes sent into reductions
  int64_t gather_collectives = 0;            // all-gathers (or broadcasts) of updated parameters, stages 1-2
  int64_t gathered_bytes = 0;                // parameter bytes received by those (stage 3: by its gathers)
};

// Throws berth::Error naming the first invalid knob of `options` and the fix (stage outside 1..3, bucket
// sizes <= 0, an offload device other than none/cpu, offload_param without stage 3).
void validate_zero_options(const ZeroOptions& options);

// How this sync works (see docs/distributed.md for the knobs):
//   prepare(model)    checks every rank has the same structure, copies rank 0's parameters to all, lays the
//                     trainable parameters (named_parameters() order) into a FlatLayout and picks the
//                     pieces every rank owns: stages 1-2 the rank's contiguous partition of the flat array,
//                     stage 3 PartitionedParameters' per-parameter pieces (which it also partitions).
//                     Gradients travel in buckets of whole parameters (reverse order, reduce_bucket_size
//                     elements at most); inside a bucket each owner's pieces are contiguous, so a bucket is
//                     one all-reduce (reduce_scatter=false) or one reduce per owner (reduce_scatter=true).
//   backward          stage 1: gradients accumulate in param.grad() as in one process; with overlap_comm the
//                     last micro-step's buckets leave from autograd hooks. Stages 2-3: every micro-step's
//                     gradients are reduced into the owner's partition as buckets fill (DeepSpeed's way),
//                     asynchronously with overlap_comm, else synchronously when the bucket fills; each
//                     param.grad() is released once copied into its bucket, and the last buckets leave at
//                     the end of backward (an autograd callback).
//   step()            stage 1 reduces now (without overlap_comm), then: global norm over the owned pieces
//                     (one all-reduce of a double), loss-scale division, overflow check, clipping with
//                     clip_grad_norm's coefficient, AdamW on the owned pieces (berth::optim::AdamW's math),
//                     then stages 1-2 all-gather the updated partitions (allgather_bucket_size elements per
//                     collective; allgather_partitions=false: each owner broadcasts), stage 3
//                     PartitionedParameters::after_step(). Gradients end as none.
// A parameter without a gradient in a backward counts as zero (DeepSpeed's behaviour), so ranks that skip a
// branch never hang the others.
// This object is the reducer and the parameter residency (stage 3: PartitionedParameters); its optimizer()
// is a ZeroShardedOptimizer. Both work on one ZeroShard: the layout, the owned pieces and their gradients.
class ZeroGradientSync final : public GradientSync, public GradientReducer, public ParameterResidency {
 public:
  ZeroGradientSync(std::shared_ptr<Communicator> comm, ZeroOptions options);
  ~ZeroGradientSync() override;
  ZeroGradientSync(const ZeroGradientSync&) = delete;
  ZeroGradientSync& operator=(const ZeroGradientSync&) = delete;

  Communicator& communicator() override { return *comm_; }
  GradientReducer& reducer() override { return *this; }
  ShardedOptimizer& optimizer() override;
  ParameterResidency& residency() override { return *this; }
  std::string strategy() const override { return "zero-" + std::to_string(options_.stage); }

  // GradientReducer.
  void prepare(torch::nn::Module& model) override;
  void begin_backward(bool last_micro_step) override;
  // Completes the gradient reduction (stage 1: all of it, unless overlap_comm did it in backward; stages
  // 2-3: waits for what is in flight). Afterwards owned_gradient(i) holds the world's mean of piece i.
  void finish_gradients(const std::vector<at::Tensor>& params) override;
  // What the stage keeps between backward and step: stage 1 whole gradients, stages 2-3 the owned partition
  // (buckets in flight are transient: at most two of reduce_bucket_size elements with overlap_comm).
  int64_t gradient_bytes() const override;

  // The optimizer's (optimizer().create(...) and so on), here too for tests and tools.
  void create(torch::nn::Module& model, const OptimizerSpec& spec);
  StepResult step(const std::vector<at::Tensor>& params, const StepOptions& options);
  void save_state(const std::string& checkpoint_dir);
  void load_state(const std::string& checkpoint_dir, const std::string& placement, torch::nn::Module& model);
  int64_t state_bytes() const;

  // ParameterResidency (stage 3 holds pieces; stages 1-2 whole parameters).
  void gather() override;
  void release() override;
  int64_t parameter_bytes(torch::nn::Module& model) const override;

  void set_lr(double lr);
  // Drops the gradients of `params` and the reduced partition (a skipped step).
  void zero_grad(const std::vector<at::Tensor>& params);

  const ZeroOptions& options() const { return options_; }
  ZeroStats stats() const;
  const FlatLayout& layout() const;
  // This rank's pieces, in flat order (stage 3: PartitionedParameters' order).
  const std::vector<ParamSegment>& owned_segments() const;
  // Piece i's reduced gradient (1-D float32, after finish_gradients) and AdamW state (after create).
  at::Tensor owned_gradient(size_t i) const;
  at::Tensor master(size_t i) const;
  at::Tensor exp_avg(size_t i) const;
  at::Tensor exp_avg_sq(size_t i) const;
  int64_t optimizer_step_count() const;
  double lr() const;

 private:
  struct Piece;
  struct Bucket;
  struct Slot;
  void release_model();
  std::vector<std::string> collect_trainable(torch::nn::Module& model);
  std::vector<std::vector<ParamSegment>> every_ranks_pieces() const;
  void build_slots(const std::vector<std::string>& names,
                   const std::vector<std::vector<ParamSegment>>& owned);
  void build_buckets();
  void take_ownership(torch::nn::Module& model, const std::vector<ParamSegment>& expected);
  void on_grad_ready(size_t slot_index);
  void add_repeated_gradient(size_t slot_index);
  void copy_into_bucket(size_t slot_index);
  void launch_ready_buckets_in_order(bool in_backward);
  void launch(size_t bucket_index, bool in_backward);
  void complete(size_t bucket_index);
  void complete_all();
  void end_of_backward();
  void reduce_all_now();

  std::shared_ptr<Communicator> comm_;
  ZeroOptions options_;
  bool armed_ = false;            // hooks act on the coming backward
  bool callback_queued_ = false;  // end_of_backward is queued for the running backward
  std::unique_ptr<ZeroShard> shard_;
  std::vector<Slot> slots_;      // one per trainable parameter, layout order
  std::vector<Bucket> buckets_;  // in launch order
  std::unique_ptr<BucketSchedule> schedule_;
  std::unique_ptr<GradientHooks> hooks_;  // one per slot
  std::unique_ptr<ZeroShardedOptimizer> optimizer_;
  ZeroStats stats_;  // the reduction's counters (the optimizer counts its own)
};

}  // namespace berth::dist
