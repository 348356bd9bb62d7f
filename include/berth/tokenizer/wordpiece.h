// The WordPiece model, exact to HF tokenizers: greedy longest-match-first subwords with a continuation
// prefix, [UNK] for words it cannot cover or longer than max_input_chars_per_word.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::tokenizer {

class VocabTrie;

struct WordPieceOptions {
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;  // counted in characters of the normalized word
};

// One subword of a word: its id and [begin, end) in bytes of the word.
struct WordPiecePiece {
  int32_t id = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
};

class WordPiece {
 public:
  // tokens[i] has id i. `source` names where the vocabulary came from, for error messages. Throws
  // berth::Error for an empty vocabulary, a duplicate token or a missing unk_token.
  WordPiece(std::vector<std::string> tokens, WordPieceOptions options = {},
            const std::string& source = "vocab");
  // Reads vocab.txt: one token per line, its id the line number from 0 (trailing whitespace trimmed, as HF
  // does). Errors name the file and line.
  static WordPiece from_file(const std::string& path, WordPieceOptions options = {});

  WordPiece(WordPiece&&) noexcept;
  WordPiece& operator=(WordPiece&&) noexcept;
  WordPiece(const WordPiece&);
  WordPiece& operator=(const WordPiece&);
  ~WordPiece();

  const WordPieceOptions& options() const { return options_; }
  size_t size() const { return tokens_.size(); }
  const std::vector<std::string>& tokens() const { return tokens_; }
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token with this id; throws berth::Error when out of range.
  const std::string& id_to_token(int64_t id) const;
  int32_t unk_id() const { return unk_id_; }

  // Appends the pieces of one pre-tokenized word (UTF-8, `chars` code points long) to out.
  void tokenize(std::string_view word, size_t chars, std::vector<WordPiecePiece>& out) const;

 private:
  void build();

  WordPieceOptions options_;
  std::vector<std::string> tokens_;
  int32_t unk_id_ = 0;
  std::unique_ptr<VocabTrie> trie_;
  uint32_t continuation_node_ = 0;  // the trie node of the continuation prefix, or VocabTrie::kNoNode
};

}  // namespace berth::tokenizer
