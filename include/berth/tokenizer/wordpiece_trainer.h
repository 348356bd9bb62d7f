// Training a WordPiece vocabulary from word counts, as HF tokenizers' WordPieceTrainer does (BPE merges with
// a "##" continuing-subword prefix, whose vocabulary becomes the WordPiece vocab; see bpe_trainer.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace berth::tokenizer {

// Defaults are those of HF's BertWordPieceTokenizer.train (the Rust WordPieceTrainer's own defaults differ:
// min_frequency 0, no special tokens, no alphabet limit).
struct WordPieceTrainerOptions {
  size_t vocab_size = 30000;   // special tokens and the alphabet count; training stops when it is reached
  uint64_t min_frequency = 2;  // a pair seen fewer times is never merged
  std::vector<std::string> special_tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};  // ids 0, 1, ...
  std::optional<size_t> limit_alphabet = 1000;  // keep only the most frequent characters
  std::vector<char32_t> initial_alphabet;       // always in the alphabet (unless the limit is smaller)
  std::string continuing_subword_prefix = "##";
  // Ids of the "##c" tokens, which follow the alphabet. Unset: by code point. HF gives them in the order its
  // hash map happens to visit the words, which changes from run to run; tests pass HF's order here to compare
  // merge for merge.
  std::optional<std::vector<std::string>> continuation_order;
};

// Trains on `word_counts` (words after normalisation and pre-tokenisation, with how often each occurs) and
// returns the vocabulary in id order: special tokens, the alphabet by code point, the "##c" continuation
// tokens, then one token per merge. Deterministic: the result does not depend on the map's iteration order.
// Words must be valid UTF-8 (berth::Error otherwise).
//
// The merge loop is train_bpe's (HF's BpeTrainer), with the "##" prefix.
std::vector<std::string> train_wordpiece(const std::unordered_map<std::string, uint64_t>& word_counts,
                                         const WordPieceTrainerOptions& options = {});

}  // namespace berth::tokenizer
