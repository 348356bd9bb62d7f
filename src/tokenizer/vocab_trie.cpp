// Builds a pointer trie, then lays it out as a double array breadth-first: each node gets the lowest base at
// which all its children's slots are free.
#include "tokenizer/vocab_trie.h"

#include <algorithm>
#include <map>

namespace berth::tokenizer {

void VocabTrie::build(const std::vector<std::pair<std::string_view, int32_t>>& tokens) {
  struct Temp {
    std::map<uint8_t, uint32_t> children;
    int32_t token = kNoToken;
  };
  std::vector<Temp> temp(1);
  for (const auto& [key, id] : tokens) {
    uint32_t node = 0;
    for (char c : key) {
      auto label = static_cast<uint8_t>(c);
      auto it = temp[node].children.find(label);
      if (it == temp[node].children.end()) {
        temp.emplace_back();
        it = temp[node].children.emplace(label, static_cast<uint32_t>(temp.size() - 1)).first;
      }
      node = it->second;
    }
    temp[node].token = id;
  }

  // Free units form a doubly linked list, so the search for a base visits free units only.
  std::vector<uint32_t> next_free, prev_free;
  std::vector<bool> used;
  const auto grow = [&](size_t size) {
    const size_t old = units_.size();
    if (size <= old) return;
    size = std::max(size, old + old / 2);
    units_.resize(size, Unit{});
    used.resize(size, false);
    next_free.resize(size);
    prev_free.resize(size);
    for (size_t i = old; i < size; ++i)
      next_free[i] = static_cast<uint32_t>(i + 1), prev_free[i] = static_cast<uint32_t>(i - 1);
    // The list's tail (the last unit) links nowhere; appending joins the old tail to the new units.
    if (old > 0) {
      size_t tail = old - 1;
      while (tail > 0 && used[tail]) --tail;
      if (!used[tail])
        next_free[tail] = static_cast<uint32_t>(old), prev_free[old] = static_cast<uint32_t>(tail);
    }
  };
  uint32_t head = 1;  // the first free unit
  const auto take = [&](size_t at) {
    used[at] = true;
    if (at == head) {
      head = next_free[at];
    } else {
      next_free[prev_free[at]] = next_free[at];
    }
    if (next_free[at] < units_.size()) prev_free[next_free[at]] = prev_free[at];  // else: past the end
  };
  grow(512 + 1);
  used[0] = true;  // the root
  units_[0].token = temp[0].token;
  std::vector<std::pair<uint32_t, uint32_t>> queue{{0, 0}};  // (temp node, unit)
  for (size_t q = 0; q < queue.size(); ++q) {
    const auto [t, unit] = queue[q];
    const auto& children = temp[t].children;
    if (children.empty()) continue;
    const uint32_t first_label = children.begin()->first;
    // Try bases that put the first child on a free unit, lowest first.
    for (size_t slot = head;; slot = next_free[slot]) {
      grow(slot + 512);
      if (slot < first_label + 1u) continue;
      const size_t base = slot - first_label;
      bool fits = true;
      for (const auto& [label, child] : children) fits = fits && !used[base + label];
      if (!fits) continue;
      units_[unit].base = static_cast<uint32_t>(base);
      for (const auto& [label, child] : children) {
        const size_t at = base + label;
        take(at);
        units_[at].parent = unit;
        units_[at].token = temp[child].token;
        queue.emplace_back(child, static_cast<uint32_t>(at));
      }
      break;
    }
  }
  // Keep 256 spare units past the last used one: child() then needs no bounds check.
  size_t last = units_.size();
  while (last > 0 && !used[last - 1]) --last;
  units_.resize(last + 256, Unit{});
  units_.shrink_to_fit();
}

uint32_t VocabTrie::walk(uint32_t node, std::string_view key) const {
  for (char c : key) {
    if (node == kNoNode) return kNoNode;
    node = child(node, static_cast<uint8_t>(c));
  }
  return node;
}

}  // namespace berth::tokenizer
