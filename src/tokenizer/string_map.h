// StringMap: an open-addressing hash map from short strings to small values, keys packed in one byte arena
// and slots in one array, so a lookup is a hash, one or two probes and one compare; what a tokenizer's
// vocabulary and per-thread piece caches need (private to the library).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::tokenizer {

// 64-bit hash of a byte string: 8 bytes at a time, multiply-xorshift mixed.
inline uint64_t hash_bytes(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = s.size() * kMul;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, s.data() + i, 8);
    h = (h ^ word) * kMul;
    h ^= h >> 29;
  }
  if (i < s.size()) {
    uint64_t word = 0;
    std::memcpy(&word, s.data() + i, s.size() - i);
    h = (h ^ word) * kMul;
    h ^= h >> 29;
  }
  return h * kMul;
}

template <typename Value>
class StringMap {
 public:
  explicit StringMap(size_t expected = 0) { rehash(capacity_for(expected)); }

  // The value of `key`, or null.
  const Value* find(std::string_view key) const { return find_slot(key, hash_bytes(key)); }
  Value* find(std::string_view key) {
    return const_cast<Value*>(std::as_const(*this).find_slot(key, hash_bytes(key)));
  }

  // Sets key's value (a later set of the same key replaces the value).
  void set(std::string_view key, const Value& value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
    const uint64_t hash = hash_bytes(key);
    if (Value* found = const_cast<Value*>(find_slot(key, hash))) {
      *found = value;
      return;
    }
    Slot& slot = slots_[free_slot(hash)];
    slot = {static_cast<uint32_t>(hash >> 32) | 1u, static_cast<uint32_t>(arena_.size()),
            static_cast<uint32_t>(key.size()), value};
    arena_.insert(arena_.end(), key.begin(), key.end());
    ++size_;
  }

  size_t size() const { return size_; }
  void clear() {
    for (Slot& slot : slots_) slot.tag = 0;
    arena_.clear();
    size_ = 0;
  }
  // Calls visit(key, value) for every entry, in no particular order.
  template <typename Visit>
  void for_each(Visit visit) const {
    for (const Slot& slot : slots_)
      if (slot.tag) visit(std::string_view(arena_.data() + slot.offset, slot.length), slot.value);
  }

 private:
  struct Slot {
    uint32_t tag = 0;  // high hash bits with the low bit set; 0: empty
    uint32_t offset = 0;
    uint32_t length = 0;
    Value value{};
  };

  static size_t capacity_for(size_t n) {
    size_t capacity = 16;
    while (capacity * 3 < n * 4 + 4) capacity *= 2;
    return capacity;
  }
  const Value* find_slot(std::string_view key, uint64_t hash) const {
    const uint32_t tag = static_cast<uint32_t>(hash >> 32) | 1u;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.tag == 0) return nullptr;
      if (slot.tag == tag && slot.length == key.size() &&
          std::memcmp(arena_.data() + slot.offset, key.data(), key.size()) == 0)
        return &slot.value;
    }
  }
  size_t free_slot(uint64_t hash) const {
    size_t i = hash & mask_;
    while (slots_[i].tag != 0) i = (i + 1) & mask_;
    return i;
  }
  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (const Slot& slot : old)
      if (slot.tag)
        slots_[free_slot(hash_bytes(std::string_view(arena_.data() + slot.offset, slot.length)))] = slot;
  }

  std::vector<Slot> slots_;
  std::vector<char> arena_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace berth::tokenizer
