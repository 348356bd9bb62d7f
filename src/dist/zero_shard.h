// ZeroShard: what one rank owns under ZeRO (its pieces of the flat parameters and their reduced gradients),
// shared by ZeroGradientSync, which reduces into it, and ZeroShardedOptimizer, which steps it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "berth/dist/flat_layout.h"
#include "berth/dist/zero3_parameters.h"

namespace berth::dist {

struct ZeroShard {
  bool prepared = false;              // ZeroGradientSync::prepare finished
  FlatLayout layout;                  // the trainable parameters end to end
  std::vector<at::Tensor> params;     // trainable parameters, layout order
  std::vector<ParamSegment> owned;    // this rank's pieces, in flat order (stage 3: PartitionedParameters')
  std::vector<int64_t> owned_offset;  // piece i's offset in gradients
  int64_t owned_numel = 0;
  at::Tensor gradients;  // [owned_numel] float32: the owned pieces' reduced gradients
  bool reduced = false;  // stage 1: gradients holds this step's reduction (it runs once)
  std::unique_ptr<PartitionedParameters> partitioned;  // stage 3

  // Piece i's values where this rank keeps them: stage 3's owned piece, else a view of the whole parameter.
  at::Tensor values(size_t i) const;  // [owned[i].numel()]
  // Piece i's reduced gradient, a view of gradients (after finish_gradients).
  at::Tensor gradient(size_t i) const;  // [owned[i].numel()]
  // Allocates gradients (zeros) unless they exist: on the CPU with `offload`, else beside the parameters.
  void ensure_gradients(bool offload);
  // Every gradient of `params` and of the trainable parameters to none, and the reduced ones dropped: zeroed
  // in place (`keep_buffer`, contiguous_gradients: one buffer for the whole run) or freed.
  void drop_gradients(const std::vector<at::Tensor>& params, bool keep_buffer);
  // No model any more: stage 3's parameters whole again, pieces and gradients gone (the layout stays until
  // the next prepare).
  void clear();
};

}  // namespace berth::dist
