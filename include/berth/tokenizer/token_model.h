// TokenModel: the "model" of tokenizer.json (BPE, Unigram, WordPiece, WordLevel): one pre-tokenized piece
// in, its tokens out, each with the bytes of the piece it covers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth::tokenizer {

struct ModelToken {
  int64_t id = 0;
  uint32_t begin = 0;  // [begin, end) in bytes of the piece, on code point boundaries
  uint32_t end = 0;
};

class TokenModel {
 public:
  virtual ~TokenModel() = default;
  // Appends the tokens of `piece` (valid UTF-8, non-empty) to out, in order.
  virtual void tokenize(std::string_view piece, std::vector<ModelToken>& out) const = 0;
  virtual std::optional<int64_t> token_to_id(std::string_view token) const = 0;
  // "" for an id outside the vocabulary.
  virtual std::string id_to_token(int64_t id) const = 0;
  virtual size_t vocab_size() const = 0;
};

}  // namespace berth::tokenizer
