// WordPiece with a byte trie: the longest vocabulary prefix at each position in one walk, instead of HF's
// trial of every shorter substring against a hash map; the same tokens by construction.
#include "berth/tokenizer/wordpiece.h"

#include <fstream>
#include <unordered_map>

#include "berth/core/error.h"
#include "tokenizer/unicode_props.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab_trie.h"

namespace berth::tokenizer {
namespace {

// Rust's str::trim_end: drops trailing characters that are char::is_whitespace.
std::string_view trim_end(std::string_view line) {
  for (size_t pos = 0; pos < line.size();) utf8::decode(line, pos);  // HF reads lines as Rust strings
  while (!line.empty()) {
    size_t last = line.size() - 1;
    while (last > 0 && utf8::is_continuation(line[last])) --last;
    size_t pos = last;
    char32_t cp = utf8::decode(line, pos);
    if (!(unicode::classes_of(cp) & unicode::kWhitespace)) break;
    line.remove_suffix(line.size() - last);
  }
  return line;
}

}  // namespace

WordPiece::WordPiece(std::vector<std::string> tokens, WordPieceOptions options, const std::string& source)
    : options_(std::move(options)), tokens_(std::move(tokens)) {
  BERTH_CHECK(!tokens_.empty(), source, ": the vocabulary is empty. Fix: point the tokenizer at a WordPiece ",
              "vocabulary (vocab.txt: one token per line)");
  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    auto [it, inserted] = seen.emplace(tokens_[i], i);
    BERTH_CHECK(inserted, source, ":", i + 1, ": token '", tokens_[i], "' appears twice (first on line ",
                it->second + 1, ", ids ", it->second, " and ", i,
                "): each token needs exactly one id. Fix: remove the duplicate line");
  }
  auto unk = seen.find(options_.unk_token);
  BERTH_CHECK(unk != seen.end(), source, ": the unknown token '", options_.unk_token,
              "' is not in the vocabulary (", tokens_.size(),
              " tokens); WordPiece needs it for words it cannot split. Fix: add a line '", options_.unk_token,
              "' or set unk_token to a token the vocabulary has");
  unk_id_ = static_cast<int32_t>(unk->second);
  build();
}

WordPiece WordPiece::from_file(const std::string& path, WordPieceOptions options) {
  std::ifstream in(path, std::ios::binary);
  BERTH_CHECK(in, "cannot open the vocabulary ", path, ". Fix: check the path (a tokenizer directory holds ",
              "vocab.txt and/or tokenizer.json)");
  std::vector<std::string> tokens;
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    try {
      tokens.emplace_back(trim_end(line));
    } catch (const Error& e) {
      BERTH_FAIL(path, ":", number, ": ", e.what());
    }
  }
  return WordPiece(std::move(tokens), std::move(options), path);
}

WordPiece::WordPiece(WordPiece&&) noexcept = default;
WordPiece& WordPiece::operator=(WordPiece&&) noexcept = default;
WordPiece::~WordPiece() = default;

WordPiece::WordPiece(const WordPiece& other)
    : options_(other.options_), tokens_(other.tokens_), unk_id_(other.unk_id_) {
  build();
}

WordPiece& WordPiece::operator=(const WordPiece& other) {
  if (this != &other) *this = WordPiece(other);
  return *this;
}

void WordPiece::build() {
  std::vector<std::pair<std::string_view, int32_t>> keys;
  keys.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) keys.emplace_back(tokens_[i], static_cast<int32_t>(i));
  trie_ = std::make_unique<VocabTrie>();
  trie_->build(keys);
  continuation_node_ = trie_->walk(trie_->root(), options_.continuing_subword_prefix);
}

std::optional<int32_t> WordPiece::token_to_id(std::string_view token) const {
  int32_t id = trie_->token_at(trie_->walk(trie_->root(), token));
  if (id == VocabTrie::kNoToken) return std::nullopt;
  return id;
}

const std::string& WordPiece::id_to_token(int64_t id) const {
  BERTH_CHECK(id >= 0 && static_cast<size_t>(id) < tokens_.size(), "token id ", id,
              " is outside the vocabulary (ids 0..", tokens_.size() - 1, ")");
  return tokens_[static_cast<size_t>(id)];
}

void WordPiece::tokenize(std::string_view word, size_t chars, std::vector<WordPiecePiece>& out) const {
  const auto size = static_cast<uint32_t>(word.size());
  if (size == 0) return;
  if (chars > options_.max_input_chars_per_word) {
    out.push_back({unk_id_, 0, size});
    return;
  }
  const size_t first = out.size();
  uint32_t start = 0;
  while (start < size) {
    uint32_t node = start == 0 ? trie_->root() : continuation_node_;
    auto [length, id] = node == VocabTrie::kNoNode
                            ? std::pair<uint32_t, int32_t>{0, VocabTrie::kNoToken}
                            : trie_->longest_match(node, word.data() + start, size - start);
    if (id == VocabTrie::kNoToken) {
      // Any part without a match makes the whole word unknown, as in HF.
      out.resize(first);
      out.push_back({unk_id_, 0, size});
      return;
    }
    out.push_back({id, start, start + length});
    start += length;
  }
}

}  // namespace berth::tokenizer
