// PieceCache: each thread's tokens of the pieces a model tokenized lately. Text repeats (emails say "the"
// thousands of times) and a model's search (BPE's merges, Unigram's best path) is the costly part
// (private to the library).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "berth/tokenizer/token_model.h"
#include "string_map.h"

namespace berth::tokenizer {

class PieceCache {
 public:
  static constexpr size_t kMaxLength = 64;  // bytes: longer pieces rarely repeat
  static constexpr size_t kMaxPieces = 1 << 18;

  // An id for a new model, to key its entries.
  static uint64_t new_model_id();
  // This thread's cache for `model`: emptied when another model used it last, or when it is full.
  static PieceCache& of(uint64_t model);

  // Appends piece's tokens (their offsets moved by `base`) to out; false when the piece is not cached.
  bool find(std::string_view piece, uint32_t base, std::vector<ModelToken>& out) const {
    const Entry* hit = pieces_.find(piece);
    if (!hit) return false;
    for (uint32_t i = hit->first; i < hit->first + hit->count; ++i) {
      const ModelToken& t = tokens_[i];
      out.push_back({t.id, t.begin + base, t.end + base});
    }
    return true;
  }
  // Remembers out[first, end) (offsets from `base`) as piece's tokens.
  void add(std::string_view piece, uint32_t base, const std::vector<ModelToken>& out, size_t first) {
    const auto start = static_cast<uint32_t>(tokens_.size());
    for (size_t i = first; i < out.size(); ++i)
      tokens_.push_back({out[i].id, out[i].begin - base, out[i].end - base});
    pieces_.set(piece, {start, static_cast<uint32_t>(out.size() - first)});
  }

 private:
  struct Entry {
    uint32_t first = 0;  // into tokens_
    uint32_t count = 0;
  };
  uint64_t model_ = 0;
  StringMap<Entry> pieces_{1024};  // grows as the thread sees text
  std::vector<ModelToken> tokens_;
};

}  // namespace berth::tokenizer
