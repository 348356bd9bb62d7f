// WordPiece vocabulary training: HF's BpeTrainer algorithm with a continuing-subword prefix.
#include "berth/tokenizer/wordpiece_trainer.h"

#include <algorithm>
#include <map>
#include <utility>

#include "berth/core/error.h"
#include "tokenizer/utf8.h"

namespace berth::tokenizer {
namespace {

using Pair = std::pair<uint32_t, uint32_t>;

uint64_t key(const Pair& pair) { return (static_cast<uint64_t>(pair.first) << 32) | pair.second; }

// The code points of a UTF-8 word; malformed UTF-8 -> berth::Error naming the word.
std::u32string decode(const std::string& word) {
  std::u32string out;
  for (size_t i = 0; i < word.size();) {
    const auto lead = static_cast<unsigned char>(word[i]);
    const size_t length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    BERTH_CHECK(length > 0 && i + length <= word.size(), "wordpiece trainer: word '", word,
                "' is not valid UTF-8 (byte ", i, "). Fix: decode the corpus to UTF-8 first");
    char32_t cp = length == 1 ? lead : lead & (0x7F >> length);
    for (size_t k = 1; k < length; ++k) {
      const auto byte = static_cast<unsigned char>(word[i + k]);
      BERTH_CHECK((byte & 0xC0) == 0x80, "wordpiece trainer: word '", word, "' is not valid UTF-8 (byte ",
                  i + k, "). Fix: decode the corpus to UTF-8 first");
      cp = (cp << 6) | (byte & 0x3F);
    }
    out += cp;
    i += length;
  }
  return out;
}

std::string encode(char32_t cp) {
  std::string out;
  utf8::append(out, cp);
  return out;
}

class Vocab {
 public:
  uint32_t add(const std::string& token) {
    auto [it, inserted] = ids_.emplace(token, static_cast<uint32_t>(tokens_.size()));
    if (inserted) tokens_.push_back(token);
    return it->second;
  }
  bool contains(const std::string& token) const { return ids_.count(token) > 0; }
  uint32_t id(const std::string& token) const { return ids_.at(token); }
  const std::string& token(uint32_t id) const { return tokens_[id]; }
  size_t size() const { return tokens_.size(); }
  std::vector<std::string> release() { return std::move(tokens_); }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> tokens_;
};

// The alphabet: every character of the corpus plus the initial alphabet, cut to the `limit` most frequent
// (initial characters count as infinitely frequent), in code point order.
std::vector<char32_t> compute_alphabet(const std::vector<std::pair<std::u32string, uint64_t>>& words,
                                       const WordPieceTrainerOptions& options) {
  std::map<char32_t, uint64_t> counts;
  for (const auto& [word, count] : words)
    for (char32_t c : word) counts[c] += count;
  for (char32_t c : options.initial_alphabet) counts[c] = UINT64_MAX;
  std::vector<std::pair<char32_t, uint64_t>> kept(counts.begin(), counts.end());
  if (options.limit_alphabet && kept.size() > *options.limit_alphabet) {
    // Least frequent first; among equals, higher code points go first (HF leaves this tie to its hash order).
    std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second < b.second : a.first > b.first;
    });
    kept.erase(kept.begin(),
               kept.begin() + static_cast<std::ptrdiff_t>(kept.size() - *options.limit_alphabet));
  }
  std::vector<char32_t> alphabet;
  for (const auto& [c, count] : kept) alphabet.push_back(c);
  std::sort(alphabet.begin(), alphabet.end());
  return alphabet;
}

// Replaces every (c1, c2) in `symbols`, left to right, by `replacement`, and reports how the counts of the
// neighbouring pairs change, exactly as HF's Word::merge does (the merged pair's own count is left alone).
void merge_word(std::vector<uint32_t>& symbols, uint32_t c1, uint32_t c2, uint32_t replacement,
                std::vector<std::pair<Pair, int>>& changes) {
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i] != c1 || i + 1 >= symbols.size() || symbols[i + 1] != c2) continue;
    if (i > 0) {
      changes.push_back({{symbols[i - 1], c1}, -1});
      changes.push_back({{symbols[i - 1], replacement}, 1});
    }
    symbols[i] = replacement;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    if (i + 1 < symbols.size()) {
      changes.push_back({{c2, symbols[i + 1]}, -1});
      changes.push_back({{replacement, symbols[i + 1]}, 1});
    }
  }
}

// A candidate merge in the queue: its count when queued and the words it was queued for.
struct Candidate {
  int64_t count;
  Pair pair;
  uint64_t sequence;  // queue order, so equal candidates leave in a fixed order
  std::vector<size_t> words;
};

// Max-heap order: higher count, then lower pair, then queued earlier.
bool lower_priority(const Candidate& a, const Candidate& b) {
  if (a.count != b.count) return a.count < b.count;
  if (a.pair != b.pair) return a.pair > b.pair;
  return a.sequence > b.sequence;
}

}  // namespace

namespace {

std::vector<std::pair<std::u32string, uint64_t>> sorted_words(
    const std::unordered_map<std::string, uint64_t>& word_counts) {
  std::vector<std::pair<std::u32string, uint64_t>> words;
  std::vector<std::pair<std::string, uint64_t>> sorted(word_counts.begin(), word_counts.end());
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [word, count] : sorted)
    if (count > 0 && !word.empty()) words.emplace_back(decode(word), count);
  return words;
}

void add_continuation_tokens(Vocab& vocab, const std::vector<std::pair<std::u32string, uint64_t>>& words,
                             const std::vector<char32_t>& alphabet, const WordPieceTrainerOptions& options) {
  const std::string& prefix = options.continuing_subword_prefix;
  // Continuation tokens "##c" for every alphabet character seen after a word's first character.
  std::vector<char32_t> continuations;
  for (const auto& [word, count] : words)
    for (size_t i = 1; i < word.size(); ++i)
      if (std::binary_search(alphabet.begin(), alphabet.end(), word[i])) continuations.push_back(word[i]);
  std::sort(continuations.begin(), continuations.end());
  continuations.erase(std::unique(continuations.begin(), continuations.end()), continuations.end());
  if (options.continuation_order) {
    for (const std::string& token : *options.continuation_order) {
      const std::u32string chars = decode(token.substr(std::min(prefix.size(), token.size())));
      BERTH_CHECK(token.rfind(prefix, 0) == 0 && chars.size() == 1 &&
                      std::binary_search(continuations.begin(), continuations.end(), chars[0]),
                  "wordpiece trainer: continuation_order holds '", token,
                  "', which is not a continuation token of this corpus. Fix: list only \"", prefix,
                  "c\" tokens for characters that follow another in some word");
      vocab.add(token);
    }
  }
  for (char32_t c : continuations) vocab.add(prefix + encode(c));
}

std::vector<std::vector<uint32_t>> word_symbols(const std::vector<std::pair<std::u32string, uint64_t>>& words,
                                                const std::vector<char32_t>& alphabet, Vocab& vocab,
                                                const std::string& prefix) {
  // Each word as token ids; characters outside the alphabet are left out, as HF does.
  std::vector<std::vector<uint32_t>> symbols(words.size());
  for (size_t w = 0; w < words.size(); ++w) {
    const std::u32string& word = words[w].first;
    for (size_t i = 0; i < word.size(); ++i) {
      if (!std::binary_search(alphabet.begin(), alphabet.end(), word[i])) continue;
      symbols[w].push_back(vocab.id(i == 0 ? encode(word[i]) : prefix + encode(word[i])));
    }
  }

  return symbols;
}

}  // namespace

std::vector<std::string> train_wordpiece(const std::unordered_map<std::string, uint64_t>& word_counts,
                                         const WordPieceTrainerOptions& options) {
  // Sorted words: nothing below depends on the hash map's order.
  const std::vector<std::pair<std::u32string, uint64_t>> words = sorted_words(word_counts);
  const std::string& prefix = options.continuing_subword_prefix;

  Vocab vocab;
  for (const std::string& special : options.special_tokens) vocab.add(special);
  const std::vector<char32_t> alphabet = compute_alphabet(words, options);
  for (char32_t c : alphabet) vocab.add(encode(c));

  add_continuation_tokens(vocab, words, alphabet, options);

  std::vector<std::vector<uint32_t>> symbols = word_symbols(words, alphabet, vocab, prefix);

  std::unordered_map<uint64_t, int64_t> pair_counts;
  std::map<Pair, std::vector<size_t>> where_to_update;  // ordered: candidates are queued in pair order
  for (size_t w = 0; w < symbols.size(); ++w) {
    for (size_t i = 0; i + 1 < symbols[w].size(); ++i) {
      const Pair pair{symbols[w][i], symbols[w][i + 1]};
      pair_counts[key(pair)] += static_cast<int64_t>(words[w].second);
      auto& positions = where_to_update[pair];
      if (positions.empty() || positions.back() != w) positions.push_back(w);
    }
  }

  std::vector<Candidate> queue;
  uint64_t sequence = 0;
  auto push = [&](Candidate candidate) {
    candidate.sequence = sequence++;
    queue.push_back(std::move(candidate));
    std::push_heap(queue.begin(), queue.end(), lower_priority);
  };
  auto queue_updates = [&] {
    for (auto& [pair, positions] : where_to_update) {
      const int64_t count = pair_counts[key(pair)];
      if (count > 0) push({count, pair, 0, std::move(positions)});
    }
    where_to_update.clear();
  };
  queue_updates();

  std::vector<std::pair<Pair, int>> changes;
  while (vocab.size() < options.vocab_size && !queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), lower_priority);
    Candidate top = std::move(queue.back());
    queue.pop_back();
    const int64_t current = pair_counts[key(top.pair)];
    if (top.count != current) {  // counted before later merges changed it: requeue with today's count
      top.count = current;
      push(std::move(top));
      continue;
    }
    if (top.count < 1 || static_cast<int64_t>(options.min_frequency) > top.count) break;

    std::string right = vocab.token(top.pair.second);
    if (right.rfind(prefix, 0) == 0) right.erase(0, prefix.size());
    const uint32_t new_id = vocab.add(vocab.token(top.pair.first) + right);

    for (size_t w : top.words) {
      changes.clear();
      merge_word(symbols[w], top.pair.first, top.pair.second, new_id, changes);
      for (const auto& [pair, change] : changes) {
        pair_counts[key(pair)] += change * static_cast<int64_t>(words[w].second);
        if (change > 0) {
          auto& positions = where_to_update[pair];
          if (positions.empty() || positions.back() != w) positions.push_back(w);
        }
      }
    }
    queue_updates();
  }
  return vocab.release();
}

}  // namespace berth::tokenizer
