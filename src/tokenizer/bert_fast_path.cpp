// BertFastPath: the added tokens found by a byte scan (leftmost, longest), the rest through BertNormalizer,
// BertPreTokenizer and WordPiece on UTF-8 with each normalized code point's original index.
#include "bert_fast_path.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "berth/tokenizer/bert_pre_tokenizer.h"
#include "utf8.h"

namespace berth::tokenizer {
namespace {

// Buffers each thread reuses: no allocation per word once warm.
struct Scratch {
  NormalizedText normalized;
  std::vector<Word> words;
  std::vector<WordPiecePiece> pieces;
};

std::optional<BertNormalizerOptions> bert_normalizer_options(const nlohmann::json& n) {
  if (!n.is_object() || n.value("type", "") != "BertNormalizer") return std::nullopt;
  BertNormalizerOptions options;
  const auto flag = [&](const char* key, bool& out) {
    if (!n.contains(key) || !n[key].is_boolean()) return false;
    out = n[key].get<bool>();
    return true;
  };
  if (!flag("clean_text", options.clean_text) ||
      !flag("handle_chinese_chars", options.handle_chinese_chars) || !flag("lowercase", options.lowercase))
    return std::nullopt;
  if (n.contains("strip_accents") && n["strip_accents"].is_boolean())
    options.strip_accents = n["strip_accents"].get<bool>();
  return options;
}

}  // namespace

std::unique_ptr<BertFastPath> BertFastPath::for_pipeline(const nlohmann::json& root,
                                                         const WordPiece* wordpiece,
                                                         const std::vector<AddedTokenSpec>& added) {
  if (!wordpiece || !root.contains("normalizer") || !root.contains("pre_tokenizer")) return nullptr;
  const nlohmann::json& pre = root["pre_tokenizer"];
  if (!pre.is_object() || pre.value("type", "") != "BertPreTokenizer") return nullptr;
  const auto options = bert_normalizer_options(root["normalizer"]);
  if (!options) return nullptr;
  for (const AddedTokenSpec& t : added)
    if (t.normalized || t.lstrip || t.rstrip || t.single_word) return nullptr;
  return std::unique_ptr<BertFastPath>(new BertFastPath(*options, *wordpiece, added));
}

BertFastPath::BertFastPath(BertNormalizerOptions options, const WordPiece& wordpiece,
                           const std::vector<AddedTokenSpec>& added)
    : normalizer_(options), wordpiece_(wordpiece), added_(added) {
  std::stable_sort(added_.begin(), added_.end(), [](const AddedTokenSpec& a, const AddedTokenSpec& b) {
    return a.content.size() > b.content.size();
  });
  for (const AddedTokenSpec& t : added_) added_first_byte_[static_cast<unsigned char>(t.content[0])] = true;
}

uint32_t BertFastPath::encode_span(std::string_view text, uint32_t first_char, uint32_t& word_index,
                                   std::vector<SourceToken>& out) const {
  thread_local Scratch s;
  s.normalized.clear();
  const uint32_t next_char = normalizer_.normalize(text, first_char, s.normalized);
  s.words.clear();
  BertPreTokenizer::split(s.normalized, s.words);
  const char* normalized = s.normalized.text.data();
  const uint32_t* origin = s.normalized.origin.data();
  for (const Word& word : s.words) {
    s.pieces.clear();
    const uint32_t bytes = word.byte_end - word.byte_begin, chars = word.char_end - word.char_begin;
    wordpiece_.tokenize(std::string_view(normalized + word.byte_begin, bytes), chars, s.pieces);
    uint32_t piece_char = word.char_begin;
    for (const WordPiecePiece& piece : s.pieces) {
      const auto length = bytes == chars
                              ? piece.end - piece.begin
                              : static_cast<uint32_t>(utf8::count_chars(std::string_view(
                                    normalized + word.byte_begin + piece.begin, piece.end - piece.begin)));
      // A token spans from its first code point's original one to its last one's.
      out.push_back({piece.id, origin[piece_char], origin[piece_char + length - 1] + 1, word_index});
      piece_char += length;
    }
    ++word_index;
  }
  return next_char;
}

void BertFastPath::encode(std::string_view text, std::vector<SourceToken>& out) const {
  size_t begin = 0;  // the text not yet encoded starts here, at code point begin_char
  uint32_t begin_char = 0;
  uint32_t word = 0;
  for (size_t pos = 0; pos < text.size() && !added_.empty();) {
    const AddedTokenSpec* match = nullptr;
    if (added_first_byte_[static_cast<unsigned char>(text[pos])])
      for (const AddedTokenSpec& token : added_)
        if (text.compare(pos, token.content.size(), token.content) == 0) {
          match = &token;
          break;
        }
    if (!match) {
      ++pos;
      continue;
    }
    const uint32_t match_char =
        pos > begin ? encode_span(text.substr(begin, pos - begin), begin_char, word, out) : begin_char;
    const auto length = static_cast<uint32_t>(utf8::count_chars(match->content));
    out.push_back({match->id, match_char, match_char + length, word++});
    pos += match->content.size();
    begin = pos;
    begin_char = match_char + length;
  }
  if (begin < text.size()) encode_span(text.substr(begin), begin_char, word, out);
}

}  // namespace berth::tokenizer
