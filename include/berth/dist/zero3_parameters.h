// ZeRO stage 3's parameters: each rank holds only its piece of every parameter between uses; a block's full
// parameters are gathered just before its forward and its backward and released after.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "berth/dist/communicator.h"
#include "berth/dist/flat_layout.h"
#include "berth/dist/zero_options.h"

namespace torch::nn {
class Module;
}

namespace berth::dist {

struct Zero3Stats {
  int64_t gathers = 0;     // parameter all-gathers (forward, backward, gather_all)
  int64_t prefetches = 0;  // gathers started ahead of use (overlap_comm)
  int64_t releases = 0;
  int64_t gathered_bytes = 0;   // bytes of full parameters materialised by gathers
  int64_t peak_full_bytes = 0;  // the most full-parameter bytes held at once (working set)
  // peak_full_bytes counts the gathered blocks' buffers (persistent parameters are in held_parameter_bytes).
  // Tensors autograd saves from a parameter (linear's weight.t()) share its block's buffer, whose storage is
  // freed on release and refilled by the next gather, so they hold no memory between forward and backward.
};

class PartitionedParameters {
 public:
  PartitionedParameters(std::shared_ptr<Communicator> comm, ZeroOptions options);
  ~PartitionedParameters();
  PartitionedParameters(const PartitionedParameters&) = delete;
  PartitionedParameters& operator=(const PartitionedParameters&) = delete;

  // Partitions the model's trainable parameters (`layout`, in the same order) with
  // per_parameter_partition(layout, rank, world, stage3_param_persistence_threshold): this rank keeps its
  // piece of each (on the CPU when offload_param is on), every partitioned parameter's data is released,
  // and layer hooks are installed on the model (a berth::LayeredModel, as every berth::TaskModel is; any
  // other module: berth::Error naming what stage 3 needs). Full parameters are gathered per block before each
  // use's forward and before its backward, and released when no use of the block is live (a block used twice,
  // as a tied decoder uses the embeddings, is gathered for each use; a tied parameter's gradient is the sum
  // over its uses when the gradient hooks see it); with overlap_comm the next uses' gathers start early
  // (stage3_prefetch_bucket_size elements ahead at most, in the use order of the first forward, reversed in
  // backward). A gather is one all-reduce of the block's buffer, zeros except this rank's pieces (exact: the
  // pieces are disjoint). Released parameters' data are empty tensors of their dtype and device.
  void partition(torch::nn::Module& model, const FlatLayout& layout);
  // Full parameters back in place, hooks removed (before another partition() or when training ends).
  void unpartition();
  // Every parameter full now (saving, exporting); release_all() partitions them again.
  void gather_all();
  void release_all();
  // This rank's pieces: segment i's values as a 1-D tensor (float32, this rank's storage). The optimizer
  // updates them in place; the next gather serves the updated values.
  const std::vector<ParamSegment>& owned_segments() const;
  at::Tensor owned_piece(size_t i) const;
  // After the optimizer updated the owned pieces: parameters kept whole on every rank (persistent, at most
  // stage3_param_persistence_threshold elements) get their owner's new value.
  void after_step();
  // Bytes of parameter data this rank holds between steps (pieces + persistent parameters).
  int64_t held_parameter_bytes() const;
  Zero3Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace berth::dist
