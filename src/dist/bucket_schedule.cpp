// BucketSchedule: per-bucket pending counts and an in-order launch queue, as c10d's Reducer keeps them.
#include "dist/bucket_schedule.h"

#include <utility>

#include "berth/core/error.h"

namespace berth::dist {

std::vector<std::vector<size_t>> group_into_buckets(
    const std::vector<at::Tensor>& params, const std::vector<size_t>& order, int64_t cap,
    const std::function<int64_t(const at::Tensor&)>& size_of) {
  std::vector<std::vector<size_t>> buckets;
  int64_t filled = 0;
  for (size_t index : order) {
    const at::Tensor& p = params[index];
    const int64_t size = size_of(p);
    bool fresh = buckets.empty();
    if (!fresh) {
      const at::Tensor& first = params[buckets.back().front()];
      fresh = first.scalar_type() != p.scalar_type() || first.device() != p.device() || filled + size > cap;
    }
    if (fresh) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(index);
    filled += size;
  }
  return buckets;
}

void BucketSchedule::assign(std::vector<std::vector<size_t>> buckets, size_t slot_count) {
  buckets_ = std::move(buckets);
  bucket_of_.assign(slot_count, buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b)
    for (size_t slot : buckets_[b]) {
      BERTH_BUG(slot < slot_count && bucket_of_[slot] == buckets_.size(), "slot ", slot,
                " is out of range or in two buckets");
      bucket_of_[slot] = b;
    }
  for (size_t slot = 0; slot < slot_count; ++slot)
    BERTH_BUG(bucket_of_[slot] < buckets_.size(), "slot ", slot, " is in no bucket");
  restart();
}

void BucketSchedule::clear() {
  buckets_.clear();
  bucket_of_.clear();
  pending_.clear();
  ready_.clear();
  next_ = 0;
}

void BucketSchedule::restart() {
  next_ = 0;
  ready_.assign(bucket_of_.size(), 0);
  pending_.resize(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].size();
}

bool BucketSchedule::mark_ready(size_t slot) {
  BERTH_BUG(!ready_[slot], "slot ", slot, " marked ready twice in one round");
  ready_[slot] = 1;
  return --pending_[bucket_of_[slot]] == 0;
}

void BucketSchedule::launch_ready_in_order(const std::function<void(size_t)>& launch) {
  while (next_ < buckets_.size() && pending_[next_] == 0) {
    launch(next_);
    ++next_;
  }
}

void BucketSchedule::fill_missing(const std::function<void(size_t)>& fill) {
  for (size_t b = next_; b < buckets_.size(); ++b)
    for (size_t slot : buckets_[b]) {
      if (ready_[slot]) continue;
      fill(slot);
      mark_ready(slot);
    }
}

}  // namespace berth::dist
