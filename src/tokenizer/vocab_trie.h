// A byte trie over a vocabulary (WordPiece's, Unigram's) for prefix lookups, stored as a double array: one
// transition is one array access, so a walk costs about one cache miss per byte (private to the library).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::tokenizer {

class VocabTrie {
 public:
  static constexpr uint32_t kNoNode = 0xFFFFFFFF;
  static constexpr int32_t kNoToken = -1;

  void build(const std::vector<std::pair<std::string_view, int32_t>>& tokens);

  uint32_t root() const { return 0; }
  // The node reached from `node` by the bytes of `key`, or kNoNode.
  uint32_t walk(uint32_t node, std::string_view key) const;
  int32_t token_at(uint32_t node) const { return node == kNoNode ? kNoToken : units_[node].token; }
  // The child of `node` (not kNoNode) by one byte, or kNoNode: for walks that want every token on the way.
  uint32_t step(uint32_t node, uint8_t byte) const { return child(node, byte); }

  // Longest key that, appended to `node`'s path, is a prefix of text and a token: {bytes, id}; {0, kNoToken}
  // when none.
  std::pair<uint32_t, int32_t> longest_match(uint32_t node, const char* text, uint32_t size) const {
    std::pair<uint32_t, int32_t> best{0, kNoToken};
    for (uint32_t i = 0; i < size; ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node == kNoNode) break;
      if (units_[node].token != kNoToken) best = {i + 1, units_[node].token};
    }
    return best;
  }

 private:
  // Node s's child by byte c sits at units_[units_[s].base + c] and is s's only if its parent is s.
  struct Unit {
    uint32_t base = 0;
    uint32_t parent = kNoNode;
    int32_t token = kNoToken;
  };

  uint32_t child(uint32_t node, uint8_t label) const {
    const uint32_t next = units_[node].base + label;  // units_ has 256 spare units past every base
    return units_[next].parent == node ? next : kNoNode;
  }

  std::vector<Unit> units_;
};

}  // namespace berth::tokenizer
