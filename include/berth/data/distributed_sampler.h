// Which dataset rows each rank reads per epoch: torch.utils.data.DistributedSampler's rules, with a shuffle
// that is the same on every platform and libtorch version.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace berth::data {

struct DistributedSamplerOptions {
  size_t rank = 0;
  size_t world_size = 1;
  uint64_t seed = 0;
  bool shuffle = true;
  // true: drop the tail that does not divide evenly among the ranks; false: pad by repeating rows from the
  // start of the (shuffled) order, so that every rank gets the same count.
  bool drop_last = false;
  // HF's group_by_length (LengthGroupedSampler): with each row's length given, the shuffled order is cut into
  // megabatches of min(N / (4 * group_batch_size), 50) * group_batch_size rows, each sorted longest first,
  // and the megabatch holding the longest row goes first (an out-of-memory shows at once). Batches then hold
  // rows of similar length, so padding costs little. group_batch_size: rows per step over all ranks.
  std::vector<size_t> lengths;
  size_t group_batch_size = 0;
};

// As torch's DistributedSampler: the epoch's order (a permutation of 0..N-1 seeded by seed + epoch, or 0..N-1
// unshuffled) is padded or cut to a multiple of world_size, and rank r takes positions r, r + world_size, ...
// The ranks' shares are disjoint (apart from padding) and together cover the dataset. The shuffle is
// SplitMix64 + Fisher-Yates, not torch.randperm, so the same seed gives the same order everywhere.
class DistributedSampler {
 public:
  // Throws berth::Error for world_size 0 or rank >= world_size, naming both.
  DistributedSampler(size_t dataset_size, DistributedSamplerOptions options);

  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }
  size_t dataset_size() const { return dataset_size_; }
  size_t num_samples() const { return num_samples_; }  // rows per rank per epoch, the same on every rank
  const DistributedSamplerOptions& options() const { return options_; }

  // This rank's rows for the current epoch, in the order to read them.
  std::vector<size_t> indices() const;
  // The whole epoch's order before it is split among ranks (padded or cut to num_samples * world_size).
  std::vector<size_t> global_order() const;

 private:
  void group_by_length(std::vector<size_t>& order) const;

  size_t dataset_size_;
  DistributedSamplerOptions options_;
  size_t num_samples_ = 0;
  uint64_t epoch_ = 0;
};

}  // namespace berth::data
