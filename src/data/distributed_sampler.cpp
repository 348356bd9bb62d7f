// The distributed sampler: torch's padding and striding rules over a platform-independent shuffle.
#include "berth/data/distributed_sampler.h"

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
  const size_t world = options_.world_size;
  num_samples_ = options_.drop_last ? dataset_size_ / world : (dataset_size_ + world - 1) / world;
}

std::vector<size_t> DistributedSampler::global_order() const {
  std::vector<size_t> order(dataset_size_);
  std::iota(order.begin(), order.end(), size_t{0});
  if (options_.shuffle) {
    SplitMix64 rng(options_.seed + epoch_);  // torch seeds its generator with seed + epoch the same way
    shuffle(order, rng);
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

std::vector<size_t> DistributedSampler::indices() const {
  const std::vector<size_t> order = global_order();
  std::vector<size_t> mine;
  mine.reserve(num_samples_);
  for (size_t i = options_.rank; i < order.size(); i += options_.world_size) mine.push_back(order[i]);
  return mine;
}

}  // namespace berth::data
