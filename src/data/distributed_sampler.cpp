// The distributed sampler: torch's padding and striding rules over a platform-independent shuffle.
#include "berth/data/distributed_sampler.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "berth/core/error.h"
#include "berth/data/split_mix64.h"

namespace berth::data {

DistributedSampler::DistributedSampler(size_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  BERTH_CHECK(options_.world_size > 0, "distributed sampler: world_size must be at least 1, found ",
              options_.world_size, " (rank ", options_.rank,
              "). Fix: set WORLD_SIZE to the number of processes");
  BERTH_CHECK(options_.rank < options_.world_size, "distributed sampler: rank ", options_.rank,
              " is out of range for world_size ", options_.world_size, ": ranks run from 0 to ",
              options_.world_size - 1, ". Fix: set RANK to 0..", options_.world_size - 1,
              " or raise WORLD_SIZE");
  BERTH_CHECK(options_.lengths.empty() || options_.lengths.size() == dataset_size_,
              "distributed sampler: group_by_length got ", options_.lengths.size(), " lengths for ",
              dataset_size_, " rows. Fix: one length per row of the dataset");
  const size_t world = options_.world_size;
  num_samples_ = options_.drop_last ? dataset_size_ / world : (dataset_size_ + world - 1) / world;
}

std::vector<size_t> DistributedSampler::global_order() const {
  std::vector<size_t> order(dataset_size_);
  std::iota(order.begin(), order.end(), size_t{0});
  if (options_.shuffle) {
    SplitMix64 rng(options_.seed + epoch_);  // torch seeds its generator with seed + epoch the same way
    shuffle(order, rng);
    if (!options_.lengths.empty()) group_by_length(order);
  }
  const size_t total = num_samples_ * options_.world_size;
  if (order.size() > total) {
    order.resize(total);
  } else {
    // Padding may exceed the dataset itself (world_size > N): repeat the order as often as needed.
    for (size_t i = 0; order.size() < total; ++i) {
      const size_t row = order[i % dataset_size_];
      order.push_back(row);
    }
  }
  return order;
}

void DistributedSampler::group_by_length(std::vector<size_t>& order) const {
  const std::vector<size_t>& lengths = options_.lengths;
  const size_t batch = std::max<size_t>(options_.group_batch_size, 1);
  const size_t mult = std::max<size_t>(std::min<size_t>(order.size() / (batch * 4), 50), 1);
  const size_t mega = mult * batch;
  size_t longest_chunk = 0;
  for (size_t begin = 0; begin < order.size(); begin += mega) {
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(begin);
    const auto last = order.begin() + static_cast<std::ptrdiff_t>(std::min(begin + mega, order.size()));
    std::stable_sort(first, last, [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
    if (lengths[*first] > lengths[order[longest_chunk]]) longest_chunk = begin;
  }
  std::swap(order[0], order[longest_chunk]);
}

std::vector<size_t> DistributedSampler::indices() const {
  const std::vector<size_t> order = global_order();
  std::vector<size_t> mine;
  mine.reserve(num_samples_);
  for (size_t i = options_.rank; i < order.size(); i += options_.world_size) mine.push_back(order[i]);
  return mine;
}

}  // namespace berth::data
