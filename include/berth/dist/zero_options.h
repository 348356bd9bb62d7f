// ZeroOptions: DeepSpeed's zero_optimization block, as berth's ZeRO gradient sync reads it; and HF's fsdp
// options mapped onto it.
#pragma once

#include <cstdint>
#include <string>

namespace berth::dist {

// Where offloaded state lives: "none" or "cpu" (DeepSpeed's "nvme" is refused by the config parser).
struct OffloadOptions {
  std::string device = "none";
  bool pin_memory = false;  // page-locked host memory, when the model is on CUDA (faster copies)
  bool enabled() const { return device == "cpu"; }
};

// DeepSpeed's defaults (deepspeed/runtime/zero/config.py), with each knob's meaning as DeepSpeed gives it.
struct ZeroOptions {
  int stage = 0;  // 0: off (DDP); 1: optimizer state sharded; 2: + gradients; 3: + parameters
  // Elements per reduce(-scatter) bucket of gradients during backward.
  int64_t reduce_bucket_size = 500000000;
  // Elements per all-gather of updated parameters after the step (stages 1 and 2).
  int64_t allgather_bucket_size = 500000000;
  // true: updated parameters are all-gathered at the end of every step; false: each rank broadcasts its
  // shard (DeepSpeed's allgather_partitions=false path). Same result.
  bool allgather_partitions = true;
  // true: gradients are reduce-scattered (each rank gets the mean of the shard it owns); false: all-reduced,
  // then each rank keeps its shard. Same result.
  bool reduce_scatter = true;
  // Launch gradient reductions from autograd hooks while backward goes on (and, stage 3, prefetch the next
  // layer's parameters); false: everything after backward.
  bool overlap_comm = false;
  // Copy gradients into one contiguous buffer as they are produced (less fragmentation).
  bool contiguous_gradients = true;
  // Stage 3: elements of parameters fetched ahead of use.
  int64_t stage3_prefetch_bucket_size = 50000000;
  // Stage 3: parameters with at most this many elements are not partitioned (kept whole on every rank).
  int64_t stage3_param_persistence_threshold = 100000;
  OffloadOptions offload_optimizer;
  OffloadOptions offload_param;  // stage 3 only
};

// HF's fsdp option string (space-separated) as ZeRO options: full_shard -> stage 3, shard_grad_op -> stage
// 2, no_shard -> stage 0, offload -> offload_param + offload_optimizer to cpu (full_shard only, as
// offload_param needs stage 3; with shard_grad_op only the optimizer), auto_wrap accepted (berth gathers
// ZeRO-3 parameters layer by layer already). "" -> stage 0. Unknown or unsupported options (hybrid_shard
// ...) and two sharding strategies -> berth::Error naming them.
ZeroOptions zero_options_from_fsdp(const std::string& fsdp);

}  // namespace berth::dist
