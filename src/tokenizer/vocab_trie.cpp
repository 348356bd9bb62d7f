// Builds a pointer trie, then flattens it: each node's children sit together, sorted by byte.
#include "tokenizer/vocab_trie.h"

#include <algorithm>
#include <map>

namespace berth::tokenizer {

void VocabTrie::build(const std::vector<std::pair<std::string_view, int32_t>>& tokens) {
  // First a simple pointer trie, then flattened.
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
  constexpr size_t kDenseFrom = 16;  // children count from which a node gets a direct 256-entry row
  nodes_.assign(temp.size(), Node{});
  labels_.clear();
  targets_.clear();
  dense_.clear();
  for (size_t i = 0; i < temp.size(); ++i) {
    Node& node = nodes_[i];
    node.token = temp[i].token;
    node.first_edge = static_cast<uint32_t>(labels_.size());
    node.edges = static_cast<uint32_t>(temp[i].children.size());
    for (const auto& [label, target] : temp[i].children) {
      labels_.push_back(label);
      targets_.push_back(target);
    }
    if (temp[i].children.size() >= kDenseFrom) {
      node.dense = static_cast<int32_t>(dense_.size() / 256);
      dense_.resize(dense_.size() + 256, kNoNode);
      for (const auto& [label, target] : temp[i].children) dense_[node.dense * size_t{256} + label] = target;
    }
  }
}

uint32_t VocabTrie::walk(uint32_t node, std::string_view key) const {
  for (char c : key) {
    if (node == kNoNode) return kNoNode;
    node = child(node, static_cast<uint8_t>(c));
  }
  return node;
}

}  // namespace berth::tokenizer
