// BPE as HF tokenizers' Word::merge_all runs it: a min-heap of (rank, position) over adjacent pairs, stale
// entries skipped when the pair at their position no longer makes the same token. Merged pieces are kept in
// a per-thread cache (piece_cache.h), and long SentencePiece-style pieces are cut where no merge can cross.
#include "berth/tokenizer/bpe.h"

#include <algorithm>
#include <cstdio>

#include "berth/core/error.h"
#include "pair_map.h"
#include "piece_cache.h"
#include "string_map.h"
#include "utf8.h"

namespace berth::tokenizer {

struct Bpe::Symbol {
  int32_t id = 0;
  int32_t prev = -1;
  int32_t next = -1;
  uint32_t begin = 0;  // bytes of the piece
  uint32_t end = 0;
};

namespace {

using TokenIds = StringMap<int32_t>;

// The code point whose runs start every SentencePiece word.
constexpr std::string_view kWordMarkerUtf8 = "\u2581";

}  // namespace

struct Bpe::Tables {
  TokenIds vocab;
  std::vector<std::string> tokens;  // by id
  PairMap merges;
  std::vector<int32_t> small_chars;                   // id of the token of code point c < 0x800, or -1
  std::unordered_map<char32_t, int32_t> large_chars;  // the same for the others
  int32_t byte_ids[256];                              // <0xXX> tokens; -1 where the vocabulary has none
  std::optional<int32_t> unk_id;
  bool plain_symbols = true;            // no prefix or suffix: a code point's symbol is its own token
  bool cut_at_marker = false;           // pieces may be cut before a ▁ (see joined_before_marker)
  std::vector<char32_t> joined_before;  // ... unless it follows one of these

  int32_t char_id(char32_t c) const {
    if (c < small_chars.size()) return small_chars[c];
    const auto it = large_chars.find(c);
    return it == large_chars.end() ? -1 : it->second;
  }
};

namespace {

// The code points that some merged token has right before a ▁ (other than ▁ itself). A piece can be cut
// before a ▁ whose previous code point is a token and none of these: no merge can then make a symbol that
// spans the cut, so the parts merge exactly as the whole would. SentencePiece vocabularies (Llama 2: none,
// Gemma 3: '>') allow a cut before almost every word.
std::vector<char32_t> joined_before_marker(const std::vector<std::string>& merge_results) {
  std::vector<char32_t> out;
  for (const std::string& token : merge_results) {
    for (size_t at = token.find(kWordMarkerUtf8, 1); at != std::string::npos;
         at = token.find(kWordMarkerUtf8, at + 1)) {
      size_t start = at - 1;
      while (start > 0 && utf8::is_continuation(token[start])) --start;
      size_t pos = start;
      const char32_t c = utf8::decode_valid(token.data(), pos);
      if (c != U'\u2581' && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
  }
  return out;
}

}  // namespace

Bpe::Bpe(const Vocab& vocab, const Merges& merges, BpeOptions options, const std::string& where)
    : tables_(std::make_unique<Tables>()),
      options_(std::move(options)),
      cache_id_(PieceCache::new_model_id()) {
  Tables& t = *tables_;
  if (options_.continuing_subword_prefix && options_.continuing_subword_prefix->empty())
    options_.continuing_subword_prefix.reset();
  if (options_.end_of_word_suffix && options_.end_of_word_suffix->empty())
    options_.end_of_word_suffix.reset();
  int64_t max_id = -1;
  t.vocab = TokenIds(vocab.size());
  for (const auto& [token, id] : vocab) {
    BERTH_CHECK(id >= 0 && id < (int64_t{1} << 31), where, ".vocab: token ", token, " has id ", id,
                ", outside 0..2^31-1");
    t.vocab.set(token, static_cast<int32_t>(id));
    max_id = std::max(max_id, id);
  }
  t.tokens.assign(static_cast<size_t>(max_id + 1), "");
  t.vocab.for_each([&](std::string_view token, int32_t id) { t.tokens[static_cast<size_t>(id)] = token; });
  const size_t prefix = options_.continuing_subword_prefix ? options_.continuing_subword_prefix->size() : 0;
  t.merges = PairMap(merges.size());
  std::vector<std::string> results;
  results.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const int32_t* left = t.vocab.find(a);
    const int32_t* right = t.vocab.find(b);
    BERTH_CHECK(left && right, where, ".merges[", rank, "]: \"", a, " ", b,
                "\" merges a token that is not in the vocabulary (", left ? b : a,
                "). Fix: use the vocabulary these merges were trained with");
    std::string merged = a + (b.size() >= prefix ? b.substr(prefix) : b);
    const int32_t* result = t.vocab.find(merged);
    BERTH_CHECK(result, where, ".merges[", rank, "]: \"", a, " ", b, "\" makes ", merged,
                ", which is not in the vocabulary. Fix: use the vocabulary these merges were trained with");
    t.merges.set(static_cast<uint32_t>(*left), static_cast<uint32_t>(*right),
                 {static_cast<uint32_t>(rank), *result});
    results.push_back(std::move(merged));
  }
  if (options_.unk_token) {
    const int32_t* unk = t.vocab.find(*options_.unk_token);
    BERTH_CHECK(unk, where, ".unk_token: \"", *options_.unk_token,
                "\" is not in the vocabulary. Fix: add it to the vocabulary or set unk_token to null");
    t.unk_id = *unk;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    const int32_t* found = t.vocab.find(name);
    t.byte_ids[b] = found ? *found : -1;
  }
  t.plain_symbols = !options_.continuing_subword_prefix && !options_.end_of_word_suffix;
  t.small_chars.assign(0x800, -1);
  t.vocab.for_each([&](std::string_view token, int32_t id) {
    size_t pos = 0;
    if (token.empty()) return;
    const char32_t c = utf8::decode_valid(token.data(), pos);
    if (pos != token.size()) return;
    if (c < t.small_chars.size())
      t.small_chars[c] = id;
    else
      t.large_chars[c] = id;
  });
  t.cut_at_marker = t.plain_symbols && !options_.ignore_merges && t.vocab.find(kWordMarkerUtf8);
  if (t.cut_at_marker) t.joined_before = joined_before_marker(results);
}

Bpe::~Bpe() = default;

std::optional<int64_t> Bpe::find(std::string_view token) const {
  const int32_t* found = tables_->vocab.find(token);
  if (!found) return std::nullopt;
  return *found;
}

void Bpe::initial_symbols(std::string_view piece, std::vector<Symbol>& symbols) const {
  const Tables& t = *tables_;
  std::optional<Symbol> unk;  // the pending unknown run
  const auto push = [&](Symbol s) {
    s.prev = static_cast<int32_t>(symbols.size()) - 1;
    symbols.push_back(s);
  };
  std::string s;
  for (size_t pos = 0; pos < piece.size();) {
    const auto begin = static_cast<uint32_t>(pos);
    const char32_t c = utf8::decode_valid(piece.data(), pos);
    const auto end = static_cast<uint32_t>(pos);
    std::string_view text = piece.substr(begin, end - begin);
    int32_t id = -1;
    if (t.plain_symbols) {
      id = t.char_id(c);
    } else {
      s.clear();
      if (begin > 0 && options_.continuing_subword_prefix) s = *options_.continuing_subword_prefix;
      s += text;
      if (end == piece.size() && options_.end_of_word_suffix) s += *options_.end_of_word_suffix;
      text = s;
      if (const int32_t* found = t.vocab.find(text)) id = *found;
    }
    if (id >= 0) {
      if (unk) push(*unk), unk.reset();
      push({id, -1, -1, begin, end});
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char b : text) all = all && t.byte_ids[static_cast<unsigned char>(b)] >= 0;
      if (all) {
        // Each byte its own token, one byte wide, as HF's Word counts them.
        uint32_t at = begin;
        for (char b : text) {
          push({t.byte_ids[static_cast<unsigned char>(b)], -1, -1, std::min(at, end - 1),
                std::min(at + 1, end)});
          ++at;
        }
        continue;
      }
    }
    if (!t.unk_id) continue;  // no unk token: HF drops the code point
    if (unk && options_.fuse_unk) {
      unk->end = end;
    } else {
      if (unk) push(*unk);
      unk = Symbol{*t.unk_id, -1, -1, begin, end};
    }
  }
  if (unk) push(*unk);
  for (size_t i = 0; i + 1 < symbols.size(); ++i) symbols[i].next = static_cast<int32_t>(i + 1);
}

void Bpe::merge_all(std::vector<Symbol>& symbols) const {
  struct Entry {
    uint32_t rank;
    int32_t pos;
    int32_t new_id;
    int32_t left, right;                        // the pair it was made for
    bool operator<(const Entry& other) const {  // the heap's top: lowest rank, then leftmost
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  const PairMap& merges = tables_->merges;
  thread_local std::vector<Entry> queue;
  queue.clear();
  const auto entry = [&](int32_t pos, int32_t left, int32_t right) -> std::optional<Entry> {
    if (const PairMap::Merge* m = merges.find(static_cast<uint32_t>(left), static_cast<uint32_t>(right)))
      return Entry{m->rank, pos, m->new_id, left, right};
    return std::nullopt;
  };
  const auto push = [&](int32_t pos, int32_t left, int32_t right) {
    if (const auto e = entry(pos, left, right)) {
      queue.push_back(*e);
      std::push_heap(queue.begin(), queue.end());
    }
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const auto e = entry(static_cast<int32_t>(i), symbols[i].id, symbols[i + 1].id)) queue.push_back(*e);
  std::make_heap(queue.begin(), queue.end());
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    const Entry top = queue.back();
    queue.pop_back();
    Symbol& current = symbols[static_cast<size_t>(top.pos)];
    if (current.end == current.begin || current.next < 0) continue;  // removed, or the last symbol
    Symbol& right = symbols[static_cast<size_t>(current.next)];
    // HF's staleness test: the pair there now must make the same token (the same pair always does).
    if (current.id != top.left || right.id != top.right) {
      const PairMap::Merge* now =
          merges.find(static_cast<uint32_t>(current.id), static_cast<uint32_t>(right.id));
      if (now == nullptr || now->new_id != top.new_id) continue;
    }
    current.id = top.new_id;
    current.end = right.end;
    current.next = right.next;
    right.end = right.begin;  // removed
    if (current.next >= 0) symbols[static_cast<size_t>(current.next)].prev = top.pos;
    if (current.prev >= 0) push(current.prev, symbols[static_cast<size_t>(current.prev)].id, current.id);
    if (current.next >= 0) push(top.pos, current.id, symbols[static_cast<size_t>(current.next)].id);
  }
}

void Bpe::tokenize_piece(std::string_view piece, uint32_t base, std::vector<ModelToken>& out) const {
  PieceCache* cache = piece.size() <= PieceCache::kMaxLength ? &PieceCache::of(cache_id_) : nullptr;
  if (cache && cache->find(piece, base, out)) return;
  const size_t first = out.size();
  const int32_t* whole = options_.ignore_merges ? tables_->vocab.find(piece) : nullptr;
  if (whole) {
    out.push_back({*whole, base, base + static_cast<uint32_t>(piece.size())});
  } else {
    thread_local std::vector<Symbol> symbols;
    symbols.clear();
    initial_symbols(piece, symbols);
    merge_all(symbols);
    // A removed symbol is empty, and a kept one never is (a code point has at least one byte).
    for (const Symbol& s : symbols)
      if (s.end != s.begin) out.push_back({s.id, s.begin + base, s.end + base});
  }
  if (cache) cache->add(piece, base, out, first);
}

void Bpe::tokenize(std::string_view piece, std::vector<ModelToken>& out) const {
  if (piece.empty()) return;
  if (!tables_->cut_at_marker) return tokenize_piece(piece, 0, out);
  // Cut before every ▁ that no merge can join to the code point before it.
  const Tables& t = *tables_;
  const size_t marker = kWordMarkerUtf8.size();
  size_t start = 0;
  for (size_t at = piece.find(kWordMarkerUtf8, 1); at != std::string_view::npos;
       at = piece.find(kWordMarkerUtf8, at + marker)) {
    size_t previous = at - 1;
    while (previous > 0 && utf8::is_continuation(piece[previous])) --previous;
    size_t pos = previous;
    const char32_t c = utf8::decode_valid(piece.data(), pos);
    const bool joined = c == U'\u2581' || t.char_id(c) < 0 ||
                        std::find(t.joined_before.begin(), t.joined_before.end(), c) != t.joined_before.end();
    if (joined) continue;
    tokenize_piece(piece.substr(start, at - start), static_cast<uint32_t>(start), out);
    start = at;
  }
  tokenize_piece(piece.substr(start), static_cast<uint32_t>(start), out);
}

std::optional<int64_t> Bpe::token_to_id(std::string_view token) const { return find(token); }

std::string Bpe::id_to_token(int64_t id) const {
  return id >= 0 && static_cast<size_t>(id) < tables_->tokens.size()
             ? tables_->tokens[static_cast<size_t>(id)]
             : std::string();
}

size_t Bpe::vocab_size() const { return tables_->tokens.size(); }

}  // namespace berth::tokenizer
