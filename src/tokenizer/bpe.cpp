// BPE as HF tokenizers' Word::merge_all runs it: a min-heap of (rank, position) over adjacent pairs, stale
// entries skipped when the pair at their position no longer makes the same token.
#include "berth/tokenizer/bpe.h"

#include <atomic>
#include <cstdio>
#include <queue>

#include "berth/core/error.h"
#include "utf8.h"

namespace berth::tokenizer {

struct Bpe::Symbol {
  int64_t id = 0;
  int64_t prev = -1;
  int64_t next = -1;
  uint32_t begin = 0;  // code points of the piece
  uint32_t end = 0;
  bool removed = false;
};

namespace {

// Each thread's merged pieces, for one model at a time: text repeats (emails say "the" thousands of times)
// and merging is the costly part. Entries are tokens with offsets relative to the piece; short pieces only.
struct PieceCache {
  uint64_t model = 0;
  std::unordered_map<std::string, std::vector<ModelToken>> pieces;
};
constexpr size_t kCachedPieces = 1 << 16;
constexpr size_t kCachedLength = 64;  // bytes

PieceCache& piece_cache(uint64_t model) {
  thread_local PieceCache cache;
  if (cache.model != model || cache.pieces.size() >= kCachedPieces) {
    cache.pieces.clear();
    cache.model = model;
  }
  return cache;
}

std::atomic<uint64_t> next_cache_id{1};

uint64_t pair_key(int64_t left, int64_t right) {
  return (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

Bpe::Bpe(std::unordered_map<std::string, int64_t> vocab,
         const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options,
         const std::string& where)
    : vocab_(std::move(vocab)), options_(std::move(options)), cache_id_(next_cache_id++) {
  int64_t max_id = -1;
  for (const auto& [token, id] : vocab_) {
    BERTH_CHECK(id >= 0 && id < (int64_t{1} << 31), where, ".vocab: token ", token, " has id ", id,
                ", outside 0..2^31-1");
    max_id = std::max(max_id, id);
  }
  tokens_.assign(static_cast<size_t>(max_id + 1), "");
  for (const auto& [token, id] : vocab_) tokens_[static_cast<size_t>(id)] = token;
  const size_t prefix = options_.continuing_subword_prefix ? options_.continuing_subword_prefix->size() : 0;
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const auto left = vocab_.find(a), right = vocab_.find(b);
    BERTH_CHECK(left != vocab_.end() && right != vocab_.end(), where, ".merges[", rank, "]: \"", a, " ", b,
                "\" merges a token that is not in the vocabulary (", left == vocab_.end() ? a : b,
                "). Fix: use the vocabulary these merges were trained with");
    const std::string merged = a + (b.size() >= prefix ? b.substr(prefix) : b);
    const auto result = vocab_.find(merged);
    BERTH_CHECK(result != vocab_.end(), where, ".merges[", rank, "]: \"", a, " ", b, "\" makes ", merged,
                ", which is not in the vocabulary. Fix: use the vocabulary these merges were trained with");
    merges_[pair_key(left->second, right->second)] = {static_cast<uint32_t>(rank), result->second};
  }
  if (options_.unk_token) {
    const auto unk = vocab_.find(*options_.unk_token);
    BERTH_CHECK(unk != vocab_.end(), where, ".unk_token: \"", *options_.unk_token,
                "\" is not in the vocabulary. Fix: add it to the vocabulary or set unk_token to null");
    unk_id_ = unk->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    const auto found = vocab_.find(name);
    byte_ids_[b] = found == vocab_.end() ? -1 : found->second;
  }
}

const Bpe::Merge* Bpe::find_merge(int64_t left, int64_t right) const {
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void Bpe::initial_symbols(const AlignedText& piece, std::vector<Symbol>& symbols) const {
  std::optional<Symbol> unk;  // the pending unknown run
  const auto push = [&](Symbol s) {
    s.prev = static_cast<int64_t>(symbols.size()) - 1;
    symbols.push_back(s);
  };
  const size_t n = piece.chars.size();
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s.clear();
    if (i > 0 && options_.continuing_subword_prefix) s = *options_.continuing_subword_prefix;
    utf8::append(s, piece.chars[i].c);
    if (i + 1 == n && options_.end_of_word_suffix) s += *options_.end_of_word_suffix;
    const auto begin = static_cast<uint32_t>(i), end = static_cast<uint32_t>(i + 1);
    if (const auto found = vocab_.find(s); found != vocab_.end()) {
      if (unk) push(*unk), unk.reset();
      push({found->second, -1, -1, begin, end});
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char b : s) all = all && byte_ids_[static_cast<unsigned char>(b)] >= 0;
      if (all) {
        for (char b : s) push({byte_ids_[static_cast<unsigned char>(b)], -1, -1, begin, end});
        continue;
      }
    }
    if (!unk_id_) continue;  // no unk token: HF drops the code point
    if (unk && options_.fuse_unk) {
      unk->end = end;
    } else {
      if (unk) push(*unk);
      unk = Symbol{*unk_id_, -1, -1, begin, end};
    }
  }
  if (unk) push(*unk);
  for (size_t i = 0; i + 1 < symbols.size(); ++i) symbols[i].next = static_cast<int64_t>(i + 1);
}

void Bpe::merge_all(std::vector<Symbol>& symbols) const {
  struct Entry {
    uint32_t rank;
    size_t pos;
    int64_t new_id;
    bool operator<(const Entry& other) const {  // the heap's top: lowest rank, then leftmost
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  std::priority_queue<Entry> queue;
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const Merge* m = find_merge(symbols[i].id, symbols[i + 1].id)) queue.push({m->rank, i, m->new_id});
  while (!queue.empty()) {
    const Entry top = queue.top();
    queue.pop();
    Symbol& current = symbols[top.pos];
    if (current.removed || current.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(current.next)];
    const Merge* still = find_merge(current.id, right.id);
    if (still == nullptr || still->new_id != top.new_id) continue;  // a stale entry
    current.id = top.new_id;
    current.end = right.end;
    current.next = right.next;
    right.removed = true;
    if (current.next >= 0) symbols[static_cast<size_t>(current.next)].prev = static_cast<int64_t>(top.pos);
    if (current.prev >= 0)
      if (const Merge* m = find_merge(symbols[static_cast<size_t>(current.prev)].id, current.id))
        queue.push({m->rank, static_cast<size_t>(current.prev), m->new_id});
    if (current.next >= 0)
      if (const Merge* m = find_merge(current.id, symbols[static_cast<size_t>(current.next)].id))
        queue.push({m->rank, top.pos, m->new_id});
  }
}

void Bpe::tokenize(const AlignedText& piece, std::vector<ModelToken>& out) const {
  if (piece.chars.empty()) return;
  const std::string text = piece.utf8();
  if (options_.ignore_merges) {
    if (const auto found = vocab_.find(text); found != vocab_.end()) {
      out.push_back({found->second, 0, static_cast<uint32_t>(piece.chars.size())});
      return;
    }
  }
  PieceCache* cache = text.size() <= kCachedLength ? &piece_cache(cache_id_) : nullptr;
  if (cache) {
    if (const auto hit = cache->pieces.find(text); hit != cache->pieces.end()) {
      out.insert(out.end(), hit->second.begin(), hit->second.end());
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(piece.chars.size());
  initial_symbols(piece, symbols);
  merge_all(symbols);
  const size_t first = out.size();
  for (const Symbol& s : symbols)
    if (!s.removed) out.push_back({s.id, s.begin, s.end});
  if (cache)
    cache->pieces.emplace(
        text, std::vector<ModelToken>(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()));
}

std::optional<int64_t> Bpe::token_to_id(std::string_view token) const {
  const auto found = vocab_.find(std::string(token));
  if (found == vocab_.end()) return std::nullopt;
  return found->second;
}

std::string Bpe::id_to_token(int64_t id) const {
  return id >= 0 && static_cast<size_t>(id) < tokens_.size() ? tokens_[static_cast<size_t>(id)]
                                                             : std::string();
}

}  // namespace berth::tokenizer
