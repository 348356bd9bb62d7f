// Unigram, exact to HF tokenizers: SentencePiece's unigram model, a piece cut into the vocabulary tokens
// whose scores sum highest (Viterbi), unknown code points fused into one unk token or spelled as <0xXX> byte
// tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "berth/tokenizer/token_model.h"

namespace berth::tokenizer {

class Unigram : public TokenModel {
 public:
  // vocab: (piece, score) by id. unk_id: the token for code points no piece covers (none: such a code point
  // is an error, as in HF). byte_fallback: spell an unknown run as its bytes' <0xXX> tokens when the
  // vocabulary has all of them. Throws berth::Error (naming `where`) for an unk_id outside the vocabulary.
  Unigram(std::vector<std::pair<std::string, double>> vocab, std::optional<int64_t> unk_id,
          bool byte_fallback, const std::string& where = "model");
  ~Unigram() override;

  void tokenize(std::string_view piece, std::vector<ModelToken>& out) const override;
  std::optional<int64_t> token_to_id(std::string_view token) const override;
  std::string id_to_token(int64_t id) const override;
  size_t vocab_size() const override { return vocab_.size(); }

  std::optional<int64_t> unk_id() const { return unk_id_; }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  struct Lookup;  // the vocabulary as a byte trie (vocab_trie.h, private to the library)
  struct Span {
    uint32_t begin;
    uint32_t end;
    int32_t id;
  };
  // The best path's tokens of piece, in order (HF's encode_optimized).
  void best_path(std::string_view piece, std::vector<Span>& path) const;
  // tokenize without the thread's cache of pieces.
  void tokenize_uncached(std::string_view piece, std::vector<ModelToken>& out) const;
  // Appends the tokens of one run of unk tokens fused together, as HF's Unigram::tokenize looks it up.
  void emit_unknown(std::string_view piece, uint32_t begin, uint32_t end, std::vector<ModelToken>& out) const;

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::vector<std::pair<std::string, double>> vocab_;
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> ids_;  // the last id of a piece
  std::unique_ptr<const Lookup> lookup_;
  double unk_score_ = 0;
  std::optional<int64_t> unk_id_;
  bool byte_fallback_ = false;
  int64_t byte_ids_[256];  // <0xXX> tokens; -1 where the vocabulary has none
  std::string where_;
  uint64_t cache_id_;  // keys this model's entries in each thread's PieceCache
};

}  // namespace berth::tokenizer
