// BucketSchedule: gradient buckets and which of them are complete in the running backward, handed out for
// their collectives in the one order every rank starts them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace berth::dist {

// Buckets of parameters, taken in `order` (indices into params, in the order their gradients become ready):
// runs of one dtype and device whose size_of() add up to at most `cap`; a parameter bigger than cap gets a
// bucket of its own. Each bucket lists its indices into params, in `order`.
std::vector<std::vector<size_t>> group_into_buckets(const std::vector<at::Tensor>& params,
                                                    const std::vector<size_t>& order, int64_t cap,
                                                    const std::function<int64_t(const at::Tensor&)>& size_of);

// Slots (one per parameter) grouped into buckets; a round (one backward) marks slots ready as their
// gradients arrive, and a bucket may launch once all of its slots are ready and every bucket before it has
// launched.
class BucketSchedule {
 public:
  // buckets[b]: the slots of bucket b; every slot 0..slot_count-1 is in exactly one. Starts a round.
  void assign(std::vector<std::vector<size_t>> buckets, size_t slot_count);
  void clear();

  size_t size() const { return buckets_.size(); }
  bool empty() const { return buckets_.empty(); }
  const std::vector<size_t>& slots(size_t bucket) const { return buckets_[bucket]; }
  size_t bucket_of(size_t slot) const { return bucket_of_[slot]; }

  // A new round: no slot ready, no bucket launched.
  void restart();
  bool ready(size_t slot) const { return ready_[slot] != 0; }
  // Marks `slot` ready; true when it was the last one its bucket waited for.
  bool mark_ready(size_t slot);
  bool launched(size_t bucket) const { return bucket < next_; }
  // The first bucket not launched yet (size() once all are).
  size_t next_to_launch() const { return next_; }
  // launch(b) for each complete bucket at the head of the queue, in index order: collectives match up across
  // ranks by order, and another rank's gradients may become ready in a different order than ours.
  void launch_ready_in_order(const std::function<void(size_t)>& launch);
  // fill(slot) for every slot not ready yet, bucket by bucket from the first not launched, then marks it
  // ready: the gradients whose hook did not fire this round.
  void fill_missing(const std::function<void(size_t)>& fill);

 private:
  std::vector<std::vector<size_t>> buckets_;
  std::vector<size_t> bucket_of_;  // per slot
  std::vector<size_t> pending_;    // per bucket: slots not ready this round
  std::vector<char> ready_;        // per slot
  size_t next_ = 0;
};

}  // namespace berth::dist
