// BPE training: HF's BpeTrainer (alphabet, affixed word tokens, the lazy priority-queue merge loop).
#include "berth/tokenizer/bpe_trainer.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "berth/core/error.h"
#include "tokenizer/utf8.h"

namespace berth::tokenizer {
namespace {

using Pair = std::pair<uint32_t, uint32_t>;
using Words = std::vector<std::pair<std::u32string, uint64_t>>;

uint64_t key(const Pair& pair) { return (static_cast<uint64_t>(pair.first) << 32) | pair.second; }

// The code points of a UTF-8 word; malformed UTF-8 -> berth::Error naming the word.
std::u32string decode(const std::string& word) {
  std::u32string out;
  for (size_t i = 0; i < word.size();) {
    const auto lead = static_cast<unsigned char>(word[i]);
    const size_t length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    BERTH_CHECK(length > 0 && i + length <= word.size(), "tokenizer trainer: word '", word,
                "' is not valid UTF-8 (byte ", i, "). Fix: decode the corpus to UTF-8 first");
    char32_t cp = length == 1 ? lead : lead & (0x7F >> length);
    for (size_t k = 1; k < length; ++k) {
      const auto byte = static_cast<unsigned char>(word[i + k]);
      BERTH_CHECK((byte & 0xC0) == 0x80, "tokenizer trainer: word '", word, "' is not valid UTF-8 (byte ",
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

// Sorted words: nothing below depends on the hash map's order.
Words sorted_words(const std::unordered_map<std::string, uint64_t>& word_counts) {
  std::vector<std::pair<std::string, uint64_t>> sorted(word_counts.begin(), word_counts.end());
  std::sort(sorted.begin(), sorted.end());
  Words words;
  words.reserve(sorted.size());
  for (const auto& [word, count] : sorted)
    if (!word.empty())
      words.emplace_back(decode(word), count);  // a count of 0 still brings its characters, as in HF
  return words;
}

// The alphabet: every character of the corpus plus the initial alphabet, cut to the `limit` most frequent
// (initial characters count as infinitely frequent), in code point order.
std::vector<char32_t> compute_alphabet(const Words& words, const BpeTrainerOptions& options) {
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

// What HF's tokenize_words makes of a word's character: the prefix unless it is the first, the suffix when
// it is the last.
std::string symbol_text(char32_t c, bool first, bool last, const BpeTrainerOptions& options) {
  std::string text = first ? std::string() : options.continuing_subword_prefix;
  utf8::append(text, c);
  if (last) text += options.end_of_word_suffix;
  return text;
}

// A character becomes a symbol when its one-character string is in the vocabulary (the alphabet, or a
// special token), as in HF.
std::unordered_map<char32_t, bool> characters_in_vocab(const Words& words, const Vocab& vocab) {
  std::unordered_map<char32_t, bool> known;
  for (const auto& [word, count] : words)
    for (char32_t c : word)
      if (known.find(c) == known.end()) known.emplace(c, vocab.contains(encode(c)));
  return known;
}

// The prefixed and suffixed symbols not yet in the vocabulary join it: the given order first, then by bytes.
void add_affixed_tokens(Vocab& vocab, const Words& words, const std::unordered_map<char32_t, bool>& known,
                        const BpeTrainerOptions& options) {
  std::vector<std::string> affixed;
  for (const auto& [word, count] : words)
    for (size_t i = 0; i < word.size(); ++i) {
      if (!known.at(word[i])) continue;
      std::string text = symbol_text(word[i], i == 0, i + 1 == word.size(), options);
      if (!vocab.contains(text)) affixed.push_back(std::move(text));
    }
  std::sort(affixed.begin(), affixed.end());
  affixed.erase(std::unique(affixed.begin(), affixed.end()), affixed.end());
  if (options.affixed_token_order) {
    for (const std::string& token : *options.affixed_token_order) {
      BERTH_CHECK(std::binary_search(affixed.begin(), affixed.end(), token), "tokenizer trainer: '", token,
                  "' is in affixed_token_order but is not a prefixed or suffixed token of this corpus. Fix: "
                  "list only tokens such as \"",
                  options.continuing_subword_prefix, "c", options.end_of_word_suffix,
                  "\" for characters the words hold");
      vocab.add(token);
    }
  }
  for (const std::string& token : affixed) vocab.add(token);
}

// One symbol of a word: a token id and how many characters of the word it covers (HF's Symbol.len, for
// max_token_length).
struct Symbol {
  uint32_t id;
  size_t length;
};

std::vector<std::vector<Symbol>> word_symbols(const Words& words,
                                              const std::unordered_map<char32_t, bool>& known,
                                              const Vocab& vocab, const BpeTrainerOptions& options) {
  // Characters outside the vocabulary are left out, as HF does.
  std::vector<std::vector<Symbol>> symbols(words.size());
  for (size_t w = 0; w < words.size(); ++w) {
    const std::u32string& word = words[w].first;
    symbols[w].reserve(word.size());
    for (size_t i = 0; i < word.size(); ++i)
      if (known.at(word[i]))
        symbols[w].push_back({vocab.id(symbol_text(word[i], i == 0, i + 1 == word.size(), options)), 1});
  }
  return symbols;
}

// Replaces every (c1, c2) in `symbols`, left to right, by `replacement`, and reports how the counts of the
// neighbouring pairs change, exactly as HF's Word::merge does: the merged pair's own count is left alone,
// and a new pair as long as max_length or longer is not counted.
void merge_word(std::vector<Symbol>& symbols, uint32_t c1, uint32_t c2, uint32_t replacement,
                size_t max_length, std::vector<std::pair<Pair, int>>& changes) {
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i].id != c1 || i + 1 >= symbols.size() || symbols[i + 1].id != c2) continue;
    const Symbol merged{replacement, symbols[i].length + symbols[i + 1].length};
    if (i > 0) {
      changes.push_back({{symbols[i - 1].id, c1}, -1});
      if (symbols[i - 1].length + merged.length < max_length)
        changes.push_back({{symbols[i - 1].id, replacement}, 1});
    }
    symbols[i] = merged;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    if (i + 1 < symbols.size()) {
      changes.push_back({{c2, symbols[i + 1].id}, -1});
      if (symbols[i + 1].length + merged.length < max_length)
        changes.push_back({{replacement, symbols[i + 1].id}, 1});
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

// HF's merge loop over the words' symbols: pair counts, the words each new pair was seen in, the queue.
class MergeLoop {
 public:
  MergeLoop(const Words& words, std::vector<std::vector<Symbol>> symbols, size_t max_token_length)
      : words_(words), symbols_(std::move(symbols)), max_length_(max_token_length) {
    for (size_t w = 0; w < symbols_.size(); ++w)
      for (size_t i = 0; i + 1 < symbols_[w].size(); ++i)
        count({symbols_[w][i].id, symbols_[w][i + 1].id}, 1, w);
    queue_updates();
  }

  // Merges until the vocabulary holds vocab_size tokens or no pair is seen min_frequency times; returns the
  // merged pairs in order (a pair merged twice is listed twice).
  std::vector<Pair> run(Vocab& vocab, const BpeTrainerOptions& options) {
    std::vector<Pair> merges;
    while (vocab.size() < options.vocab_size && !queue_.empty()) {
      Candidate top = pop();
      const int64_t current = pair_counts_[key(top.pair)];
      if (top.count != current) {  // counted before later merges changed it: requeue with today's count
        top.count = current;
        push(std::move(top));
        continue;
      }
      if (top.count < 1 || static_cast<int64_t>(options.min_frequency) > top.count) break;
      std::string right = vocab.token(top.pair.second);
      const std::string& prefix = options.continuing_subword_prefix;
      if (!prefix.empty() && right.rfind(prefix, 0) == 0) right.erase(0, prefix.size());
      const uint32_t new_id = vocab.add(vocab.token(top.pair.first) + right);
      merges.push_back(top.pair);
      apply(top, new_id);
      queue_updates();
    }
    return merges;
  }

 private:
  void count(const Pair& pair, int change, size_t w) {
    pair_counts_[key(pair)] += change * static_cast<int64_t>(words_[w].second);
    if (change > 0) {
      auto& positions = where_to_update_[pair];
      if (positions.empty() || positions.back() != w) positions.push_back(w);
    }
  }

  void apply(const Candidate& top, uint32_t new_id) {
    for (size_t w : top.words) {
      changes_.clear();
      merge_word(symbols_[w], top.pair.first, top.pair.second, new_id, max_length_, changes_);
      for (const auto& [pair, change] : changes_) count(pair, change, w);
    }
  }

  // Queues every pair that gained occurrences, with the words it gained them in.
  void queue_updates() {
    for (auto& [pair, positions] : where_to_update_) {
      const int64_t count = pair_counts_[key(pair)];
      if (count > 0) push({count, pair, 0, std::move(positions)});
    }
    where_to_update_.clear();
  }

  void push(Candidate candidate) {
    candidate.sequence = sequence_++;
    queue_.push_back(std::move(candidate));
    std::push_heap(queue_.begin(), queue_.end(), lower_priority);
  }

  Candidate pop() {
    std::pop_heap(queue_.begin(), queue_.end(), lower_priority);
    Candidate top = std::move(queue_.back());
    queue_.pop_back();
    return top;
  }

  const Words& words_;
  std::vector<std::vector<Symbol>> symbols_;
  size_t max_length_;
  std::unordered_map<uint64_t, int64_t> pair_counts_;
  std::map<Pair, std::vector<size_t>> where_to_update_;  // ordered: candidates are queued in pair order
  std::vector<Candidate> queue_;
  uint64_t sequence_ = 0;
  std::vector<std::pair<Pair, int>> changes_;
};

// HF keeps a pair merged twice at the rank of its last merge (its merge map is filled in order).
std::vector<std::pair<std::string, std::string>> ranked_merges(const std::vector<Pair>& merges,
                                                               const Vocab& vocab) {
  std::unordered_map<uint64_t, size_t> last;
  for (size_t i = 0; i < merges.size(); ++i) last[key(merges[i])] = i;
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(last.size());
  for (size_t i = 0; i < merges.size(); ++i)
    if (last[key(merges[i])] == i)
      out.emplace_back(vocab.token(merges[i].first), vocab.token(merges[i].second));
  return out;
}

}  // namespace

TrainedBpe train_bpe(const std::unordered_map<std::string, uint64_t>& word_counts,
                     const BpeTrainerOptions& options) {
  const Words words = sorted_words(word_counts);
  Vocab vocab;
  for (const std::string& special : options.special_tokens) vocab.add(special);
  for (char32_t c : compute_alphabet(words, options)) vocab.add(encode(c));
  const std::unordered_map<char32_t, bool> known = characters_in_vocab(words, vocab);
  add_affixed_tokens(vocab, words, known, options);

  MergeLoop loop(words, word_symbols(words, known, vocab, options),
                 options.max_token_length.value_or(std::numeric_limits<size_t>::max()));
  const std::vector<Pair> merges = loop.run(vocab, options);
  TrainedBpe result;
  result.merges = ranked_merges(merges, vocab);
  result.vocab = vocab.release();
  return result;
}

}  // namespace berth::tokenizer
