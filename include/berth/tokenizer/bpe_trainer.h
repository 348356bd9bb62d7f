// Training a BPE vocabulary and its merges from word counts, exactly as HF tokenizers' BpeTrainer does
// (byte-level BPE as GPT-2, RoBERTa and Llama 3 train it; WordPiece through its "##" prefix).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace berth::tokenizer {

// Defaults are those of HF's BpeTrainer: no special tokens, min_frequency 0, no alphabet limit.
struct BpeTrainerOptions {
  size_t vocab_size = 30000;   // special tokens and the alphabet count; training stops when it is reached
  uint64_t min_frequency = 0;  // a pair seen fewer times is never merged
  std::vector<std::string> special_tokens;  // ids 0, 1, ... in this order
  std::optional<size_t> limit_alphabet;     // keep only the most frequent characters
  std::vector<char32_t> initial_alphabet;   // always in the alphabet (unless the limit is smaller)
  std::string continuing_subword_prefix;    // put before every character but a word's first ("" = none)
  std::string end_of_word_suffix;           // put after a word's last character ("" = none)
  // A merge whose neighbours would make a token of this many characters or more is not counted (HF's
  // max_token_length, with HF's strict comparison). Unset: no limit.
  std::optional<size_t> max_token_length;
  // Ids of the prefixed and suffixed tokens words start as ("##c", "c</w>"), which follow the alphabet:
  // these first, in this order, then the others by their UTF-8 bytes. HF gives them in the order its hash map
  // visits the words, which changes from run to run; tests pass HF's order here to compare id for id.
  std::optional<std::vector<std::string>> affixed_token_order;
};

struct TrainedBpe {
  std::vector<std::string> vocab;                           // tokens in id order
  std::vector<std::pair<std::string, std::string>> merges;  // by rank, as HF's tokenizer.json lists them
};

// Trains on `word_counts` (words after normalisation and pre-tokenisation, with how often each occurs):
// the vocabulary is the special tokens, the alphabet by code point, the affixed tokens, then one token per
// merge. Deterministic: the result does not depend on the map's iteration order. Words must be valid UTF-8
// (berth::Error otherwise).
//
// The merge loop is HF's: the pair with the highest count is merged, ties going to the lower pair of ids;
// counts are updated lazily through a priority queue whose entries each carry the words they were counted
// in, and a merge applies to those words. A merge that makes a token the vocabulary already has adds no
// token; when such a pair is merged again later, the merge list keeps only its last place, as HF's does.
TrainedBpe train_bpe(const std::unordered_map<std::string, uint64_t>& word_counts,
                     const BpeTrainerOptions& options = {});

}  // namespace berth::tokenizer
