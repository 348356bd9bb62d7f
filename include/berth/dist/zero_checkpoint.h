// ZeRO checkpoints that ignore world size: each rank saves the optimizer state of the parameter pieces it
// owns, with the layout needed to rebuild any other partition (another world size or stage) or the full
// tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "berth/dist/flat_layout.h"

namespace berth::dist {

// The AdamW state of one parameter piece: 1-D float32 CPU tensors of the piece's length.
struct SegmentState {
  at::Tensor master;      // fp32 master weights of the piece
  at::Tensor exp_avg;     // Adam's first moment
  at::Tensor exp_avg_sq;  // Adam's second moment
};

struct ZeroShardInfo {
  int64_t rank = 0;
  int64_t world_size = 1;
  int stage = 1;
  int64_t step = 0;  // optimizer steps taken (Adam's bias-correction count; the same for every piece)
};

// Writes checkpoint_dir/zero/rank_<R>_of_<W>.safetensors (atomically) holding `states[i]` for
// `segments[i]`, and (rank 0) checkpoint_dir/zero/layout.json with `layout`, the world size and the stage.
// Every rank calls it with its own segments; together the ranks' segments cover every parameter once.
void save_zero_shard(const std::string& checkpoint_dir, const FlatLayout& layout, const ZeroShardInfo& info,
                     const std::vector<ParamSegment>& segments, const std::vector<SegmentState>& states);

// Whether checkpoint_dir holds ZeRO shards (zero/layout.json).
bool has_zero_shards(const std::string& checkpoint_dir);

// "rank_<R>_of_<W>.safetensors": a rank's shard file inside checkpoint_dir/zero/.
std::string zero_shard_file_name(int64_t rank, int64_t world_size);

// What checkpoint_dir/zero/layout.json records (docs/distributed.md, "ZeRO checkpoints", has the format).
struct ZeroCheckpointLayout {
  FlatLayout layout;  // the saving run's trainable parameters, in its flat order
  int64_t world_size = 1;
  int stage = 1;
  int64_t step = 0;
  std::vector<std::string> rank_files;  // relative to checkpoint_dir/zero/, one per rank
};
// Reads and checks zero/layout.json; berth::Error naming the file and the fix when absent or invalid.
ZeroCheckpointLayout read_zero_layout(const std::string& checkpoint_dir);

// The state of `wanted` pieces (pieces of `layout`'s parameters), read from whatever checkpoint_dir holds:
// ZeRO shards written with any world size and stage, or a full optimizer.safetensors (berth's replicated
// AdamW file) with model.safetensors for the master weights. Parameters are matched by name and checked by
// shape; a checkpoint of another model throws berth::Error naming the first difference and the fix.
// `step` receives the saved step count.
std::vector<SegmentState> load_zero_segments(const std::string& checkpoint_dir, const FlatLayout& layout,
                                             const std::vector<ParamSegment>& wanted, int64_t* step);

// Every parameter's full fp32 value (by name, with its shape), rebuilt from the ZeRO shards' master
// weights; a checkpoint without shards: model.safetensors as saved. For `berth export`.
std::map<std::string, at::Tensor> consolidate_parameters(const std::string& checkpoint_dir);

}  // namespace berth::dist
