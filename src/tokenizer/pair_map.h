// PairMap: BPE's merge table, an open-addressing hash map from a pair of token ids to the merge's rank and
// result, probed linearly in two flat arrays (private to the library).
#pragma once

#include <cstdint>
#include <vector>

namespace berth::tokenizer {

class PairMap {
 public:
  struct Merge {
    uint32_t rank = 0;
    int32_t new_id = 0;
  };

  explicit PairMap(size_t expected = 0) {
    size_t capacity = 16;
    while (capacity < expected * 2) capacity *= 2;
    keys_.assign(capacity, kEmpty);
    values_.resize(capacity);
    mask_ = capacity - 1;
  }

  // Sets the merge of (left, right), replacing an earlier one (a later duplicate in merges wins, as in HF).
  void set(uint32_t left, uint32_t right, Merge merge) {
    if ((size_ + 1) * 2 > keys_.size()) grow();
    const uint64_t key = pack(left, right);
    size_t slot = slot_of(key);
    while (keys_[slot] != kEmpty && keys_[slot] != key) slot = (slot + 1) & mask_;
    size_ += keys_[slot] == kEmpty;
    keys_[slot] = key;
    values_[slot] = merge;
  }

  const Merge* find(uint32_t left, uint32_t right) const {
    const uint64_t key = pack(left, right);
    for (size_t slot = slot_of(key);; slot = (slot + 1) & mask_) {
      if (keys_[slot] == key) return &values_[slot];
      if (keys_[slot] == kEmpty) return nullptr;
    }
  }

  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(uint32_t left, uint32_t right) { return (uint64_t{left} << 32) | right; }
  size_t slot_of(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask_;
  }

  void grow() {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<Merge> values = std::move(values_);
    keys_.assign(keys.size() * 2, kEmpty);
    values_.assign(keys.size() * 2, Merge{});
    mask_ = keys_.size() - 1;
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty)
        set(static_cast<uint32_t>(keys[i] >> 32), static_cast<uint32_t>(keys[i]), values[i]);
  }

  std::vector<uint64_t> keys_;
  std::vector<Merge> values_;
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace berth::tokenizer
