// FlatLayout: offsets of parameters in one flat array and the partitions of it.
#include "berth/dist/flat_layout.h"

#include <algorithm>

#include "berth/core/error.h"

namespace berth::dist {

int64_t FlatLayout::padded_numel(int64_t world_size) const {
  BERTH_CHECK(world_size > 0, "FlatLayout: world size must be positive, got ", world_size);
  return (numel + world_size - 1) / world_size * world_size;
}

std::pair<int64_t, int64_t> FlatLayout::partition(int64_t rank, int64_t world_size) const {
  BERTH_CHECK(rank >= 0 && rank < world_size, "FlatLayout: rank ", rank, " is outside world size ",
              world_size);
  const int64_t size = padded_numel(world_size) / world_size;
  return {rank * size, (rank + 1) * size};
}

std::vector<ParamSegment> FlatLayout::segments_in(int64_t begin, int64_t end) const {
  std::vector<ParamSegment> segments;
  for (size_t i = 0; i < entries.size(); ++i) {
    const FlatEntry& entry = entries[i];
    const int64_t lo = std::max(begin, entry.offset);
    const int64_t hi = std::min(end, entry.offset + entry.numel);
    if (lo < hi) segments.push_back({static_cast<int64_t>(i), lo - entry.offset, hi - entry.offset});
  }
  return segments;
}

int64_t FlatLayout::index_of(const std::string& name) const {
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].name == name) return static_cast<int64_t>(i);
  BERTH_CHECK(false, "the parameter layout has no parameter named '", name, "' (it has ", entries.size(),
              " parameters). Fix: use the model this state was made for");
  return -1;
}

std::string FlatLayout::signature() const {
  std::string text;
  for (const FlatEntry& entry : entries) {
    text += entry.name + ":";
    for (size_t d = 0; d < entry.shape.size(); ++d) text += (d ? "x" : "") + std::to_string(entry.shape[d]);
    text += ";";
  }
  return text;
}

FlatLayout make_flat_layout(const std::vector<std::string>& names, const std::vector<at::Tensor>& params) {
  BERTH_CHECK(names.size() == params.size(), "make_flat_layout: ", names.size(), " names for ", params.size(),
              " parameters");
  FlatLayout layout;
  for (size_t i = 0; i < params.size(); ++i) {
    FlatEntry entry;
    entry.name = names[i];
    entry.shape = params[i].sizes().vec();
    entry.numel = params[i].numel();
    entry.offset = layout.numel;
    layout.numel += entry.numel;
    layout.entries.push_back(std::move(entry));
  }
  return layout;
}

std::vector<ParamSegment> per_parameter_partition(const FlatLayout& layout, int64_t rank, int64_t world_size,
                                                  int64_t persistence_threshold) {
  BERTH_CHECK(rank >= 0 && rank < world_size, "per_parameter_partition: rank ", rank,
              " is outside world size ", world_size);
  std::vector<ParamSegment> segments;
  for (size_t i = 0; i < layout.entries.size(); ++i) {
    const int64_t n = layout.entries[i].numel;
    if (n <= persistence_threshold) {
      if (rank == 0 && n > 0) segments.push_back({static_cast<int64_t>(i), 0, n});
      continue;
    }
    const int64_t piece = (n + world_size - 1) / world_size;
    const int64_t begin = std::min(n, rank * piece);
    const int64_t end = std::min(n, begin + piece);
    if (begin < end) segments.push_back({static_cast<int64_t>(i), begin, end});
  }
  return segments;
}

}  // namespace berth::dist
