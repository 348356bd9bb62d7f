// PairMap: BPE's merge table, an open-addressing hash map from a pair of token ids to the merge's rank and
// result, probed linearly in one flat array of 16-byte slots (key and value in the same cache line: a lookup
// in a table of 100k-300k merges is one cache miss, not two). Private to the library.
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
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
  }

  // Sets the merge of (left, right), replacing an earlier one (a later duplicate in merges wins, as in HF).
  void set(uint32_t left, uint32_t right, Merge merge) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const uint64_t key = pack(left, right);
    size_t slot = slot_of(key);
    while (slots_[slot].key != kEmpty && slots_[slot].key != key) slot = (slot + 1) & mask_;
    size_ += slots_[slot].key == kEmpty;
    slots_[slot] = {key, merge};
  }

  const Merge* find(uint32_t left, uint32_t right) const {
    const uint64_t key = pack(left, right);
    for (size_t slot = slot_of(key);; slot = (slot + 1) & mask_) {
      if (slots_[slot].key == key) return &slots_[slot].merge;
      if (slots_[slot].key == kEmpty) return nullptr;
    }
  }

  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct alignas(16) Slot {
    uint64_t key = kEmpty;
    Merge merge;
  };
  static uint64_t pack(uint32_t left, uint32_t right) { return (uint64_t{left} << 32) | right; }
  size_t slot_of(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask_;
  }

  void grow() {
    std::vector<Slot> slots = std::move(slots_);
    slots_.assign(slots.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : slots)
      if (s.key != kEmpty) set(static_cast<uint32_t>(s.key >> 32), static_cast<uint32_t>(s.key), s.merge);
  }

  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace berth::tokenizer
