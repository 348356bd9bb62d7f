// BPE, exact to HF tokenizers: a piece's code points (or their bytes as <0xXX> tokens) merged pair by pair,
// lowest merge rank first and leftmost among equals; byte-level (GPT-2, Llama 3, Qwen) and SentencePiece
// style (Llama 2, Gemma) alike.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "berth/tokenizer/token_model.h"

namespace berth::tokenizer {

struct BpeOptions {
  std::optional<std::string> unk_token;                  // none: code points outside the vocabulary vanish
  std::optional<std::string> continuing_subword_prefix;  // prepended to every code point but a piece's first
  std::optional<std::string> end_of_word_suffix;         // appended to a piece's last code point
  bool fuse_unk = false;                                 // consecutive unknown code points give one unk token
  bool byte_fallback = false;  // an unknown code point becomes its UTF-8 bytes' <0xXX> tokens
  bool ignore_merges = false;  // a piece that is itself a token is that token, unmerged
};

class Bpe : public TokenModel {
 public:
  using Vocab = std::vector<std::pair<std::string, int64_t>>;
  using Merges = std::vector<std::pair<std::string, std::string>>;

  // vocab: (token, id); merges: pairs in rank order. Throws berth::Error (naming `where`) for a merge whose
  // parts or result are not tokens, or an unk_token outside the vocabulary.
  Bpe(const Vocab& vocab, const Merges& merges, BpeOptions options, const std::string& where = "model");
  ~Bpe() override;

  void tokenize(std::string_view piece, std::vector<ModelToken>& out) const override;
  std::optional<int64_t> token_to_id(std::string_view token) const override;
  std::string id_to_token(int64_t id) const override;
  size_t vocab_size() const override;
  const BpeOptions& options() const { return options_; }

 private:
  struct Tables;
  struct Symbol;
  // The initial symbols of a piece: one per code point, or per byte where byte fallback applies.
  void initial_symbols(std::string_view piece, std::vector<Symbol>& symbols) const;
  void merge_all(std::vector<Symbol>& symbols) const;
  // One piece, merged (or taken from the thread's cache): tokens with offsets from `base`.
  void tokenize_piece(std::string_view piece, uint32_t base, std::vector<ModelToken>& out) const;
  std::optional<int64_t> find(std::string_view token) const;

  std::unique_ptr<Tables> tables_;
  BpeOptions options_;
  uint64_t cache_id_;  // keys this model's entries in each thread's cache of merged pieces
};

}  // namespace berth::tokenizer
