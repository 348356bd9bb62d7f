// A byte trie over a WordPiece vocabulary for greedy longest-match lookups (private to the library).
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

  int32_t token_at(uint32_t node) const { return node == kNoNode ? kNoToken : nodes_[node].token; }

  // Longest key that, appended to `node`'s path, is a prefix of text and a token: {bytes, id}; {0, kNoToken}
  // when none.
  std::pair<uint32_t, int32_t> longest_match(uint32_t node, const char* text, uint32_t size) const {
    std::pair<uint32_t, int32_t> best{0, kNoToken};
    for (uint32_t i = 0; i < size; ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node == kNoNode) break;
      if (nodes_[node].token != kNoToken) best = {i + 1, nodes_[node].token};
    }
    return best;
  }

 private:
  struct Node {
    uint32_t first_edge = 0;  // children: labels_/targets_[first_edge, first_edge + edges), sorted by label
    uint32_t edges = 0;
    int32_t token = kNoToken;
    int32_t dense = -1;  // for nodes with many children: index of a 256-entry row in dense_
  };

  uint32_t child(uint32_t node, uint8_t label) const {
    const Node& n = nodes_[node];
    if (n.dense >= 0) return dense_[static_cast<size_t>(n.dense) * 256 + label];
    const uint8_t* labels = labels_.data() + n.first_edge;
    for (uint32_t i = 0; i < n.edges; ++i) {
      if (labels[i] == label) return targets_[n.first_edge + i];
      if (labels[i] > label) break;
    }
    return kNoNode;
  }

  std::vector<Node> nodes_;
  std::vector<uint8_t> labels_;
  std::vector<uint32_t> targets_;
  std::vector<uint32_t> dense_;
};

}  // namespace berth::tokenizer
