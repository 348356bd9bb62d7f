// PieceCache's per-thread instance and model ids.
#include "piece_cache.h"

#include <atomic>

namespace berth::tokenizer {

uint64_t PieceCache::new_model_id() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

PieceCache& PieceCache::of(uint64_t model) {
  thread_local PieceCache cache;
  if (cache.model_ != model || cache.pieces_.size() >= kMaxPieces) {
    cache.pieces_.clear();
    cache.tokens_.clear();
    cache.model_ = model;
  }
  return cache;
}

}  // namespace berth::tokenizer
