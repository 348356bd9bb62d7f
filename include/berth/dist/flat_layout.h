// FlatLayout: the trainable parameters laid end to end as one flat array, and the pieces of it a rank owns
// (ZeRO's partitions, its checkpoints' shards).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace berth::dist {

struct FlatEntry {
  std::string name;            // the parameter's dotted name (model.named_parameters())
  std::vector<int64_t> shape;  // its shape
  int64_t numel = 0;
  int64_t offset = 0;  // where its elements start in the flat array
};

// Elements [begin, end) of parameter `param` (an index into FlatLayout::entries), flattened row-major.
struct ParamSegment {
  int64_t param = 0;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t numel() const { return end - begin; }
  bool operator==(const ParamSegment& other) const {
    return param == other.param && begin == other.begin && end == other.end;
  }
};

struct FlatLayout {
  std::vector<FlatEntry> entries;  // in flat order
  int64_t numel = 0;               // sum of the entries' numel

  // The flat array rounded up to a multiple of world_size, so every rank's partition has the same length
  // (DeepSpeed pads the same way; the padding is zeros no parameter owns).
  int64_t padded_numel(int64_t world_size) const;
  // Rank r's contiguous partition [begin, end) of the padded flat array (stages 1 and 2).
  std::pair<int64_t, int64_t> partition(int64_t rank, int64_t world_size) const;
  // The parameter pieces inside flat range [begin, end) (padding excluded), in flat order.
  std::vector<ParamSegment> segments_in(int64_t begin, int64_t end) const;
  // Index of the entry named `name`; berth::Error when absent.
  int64_t index_of(const std::string& name) const;
  // "name:shape;..." for agreement checks and checkpoint compatibility messages.
  std::string signature() const;
};

// names[i] is params[i]'s name; the layout keeps their order.
FlatLayout make_flat_layout(const std::vector<std::string>& names, const std::vector<at::Tensor>& params);

// Stage 3's partition: every parameter split into world_size near-equal pieces, rank r owning piece r of each
// (parameters of at most `persistence_threshold` elements are not split: rank 0 owns them whole for the
// optimizer, while every rank keeps the full value).
std::vector<ParamSegment> per_parameter_partition(const FlatLayout& layout, int64_t rank, int64_t world_size,
                                                  int64_t persistence_threshold = 0);

}  // namespace berth::dist
