// The tokenizer pipeline in HF tokenizers' order: added tokens split out of the raw text, each piece
// normalized, pre-tokenized and WordPiece-tokenized; then truncation, template and padding per encoding.
#include "berth/tokenizer/wordpiece_tokenizer.h"

#include <algorithm>
#include <utility>

#include "berth/core/error.h"
#include "berth/tokenizer/bert_pre_tokenizer.h"
#include "tokenizer/parallel_encode.h"
#include "tokenizer/truncation.h"
#include "tokenizer/utf8.h"

namespace berth::tokenizer {
namespace {

template <typename T>
void pad_vector(std::vector<T>& v, size_t count, T value, Side side) {
  v.insert(side == Side::Right ? v.end() : v.begin(), count, value);
}

}  // namespace

// One sequence's tokens before the template. Truncation only narrows the window [begin, end): the tokens are
// written once, into the final Encoding, by post_process.
struct WordPieceTokenizer::SequenceTokens {
  std::vector<int32_t> ids;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  size_t begin = 0;
  size_t end = 0;

  size_t size() const { return end - begin; }
  void clear() {
    ids.clear();
    offsets.clear();
    begin = end = 0;
  }
  void push(int32_t id, uint32_t start, uint32_t stop) {
    ids.push_back(id);
    offsets.emplace_back(start, stop);
    end = ids.size();
  }
  // HF's Encoding::truncate, for the part it keeps (berth returns no overflowing windows); with keep_head,
  // the first keep_head tokens and the last max_length - keep_head (the middle moved out).
  void truncate(size_t max_length, const TruncationOptions& options) {
    if (max_length >= size()) return;
    if (options.keep_head) {
      const size_t head = std::min(*options.keep_head, max_length);
      const size_t tail_from = end - (max_length - head);
      std::move(ids.begin() + static_cast<std::ptrdiff_t>(tail_from),
                ids.begin() + static_cast<std::ptrdiff_t>(end),
                ids.begin() + static_cast<std::ptrdiff_t>(begin + head));
      std::move(offsets.begin() + static_cast<std::ptrdiff_t>(tail_from),
                offsets.begin() + static_cast<std::ptrdiff_t>(end),
                offsets.begin() + static_cast<std::ptrdiff_t>(begin + head));
      end = begin + max_length;
    } else if (options.direction == Side::Right) {
      end = begin + max_length;
    } else {
      begin = end - max_length;
    }
  }
};

namespace {

using SequenceTokens = WordPieceTokenizer::SequenceTokens;

// Buffers reused across the encodes of one thread: no allocation per word or token once warm.
struct Scratch {
  NormalizedText normalized;
  std::vector<Word> words;
  std::vector<WordPiecePiece> pieces;
  SequenceTokens first;
  SequenceTokens second;
};

Scratch& scratch() {
  thread_local Scratch buffers;
  return buffers;
}

// HF's truncate_encodings; max_length already has the template's special tokens taken off.
void truncate_encodings(SequenceTokens& first, SequenceTokens* second, size_t max_length,
                        const TruncationOptions& options) {
  const KeptLengths kept =
      kept_lengths(first.size(), second ? std::optional<size_t>(second->size()) : std::nullopt, max_length,
                   options.strategy);
  first.truncate(kept.first, options);
  if (second) second->truncate(kept.second, options);
}

}  // namespace

TemplateProcessing TemplateProcessing::bert(const std::string& cls, int64_t cls_id, const std::string& sep,
                                            int64_t sep_id) {
  using Kind = TemplatePiece::Kind;
  TemplateProcessing t;
  t.single = {{Kind::SpecialToken, 0, cls, 0}, {Kind::Sequence, 0, "", 0}, {Kind::SpecialToken, 0, sep, 0}};
  t.pair = t.single;
  t.pair.push_back({Kind::Sequence, 1, "", 1});
  t.pair.push_back({Kind::SpecialToken, 0, sep, 1});
  t.special_tokens = {{cls, {cls_id}, {cls}}, {sep, {sep_id}, {sep}}};
  return t;
}

size_t TemplateProcessing::added_tokens(bool is_pair) const {
  size_t n = 0;
  for (const TemplatePiece& piece : is_pair ? pair : single) {
    if (piece.kind != TemplatePiece::Kind::SpecialToken) continue;
    for (const TemplateSpecialToken& token : special_tokens)
      if (token.name == piece.special_token) n += token.ids.size();
  }
  return n;
}

void pad_encodings(std::vector<Encoding>& encodings, const PaddingOptions& padding) {
  if (encodings.empty()) return;
  size_t length = padding.max_length;
  if (padding.strategy == PaddingStrategy::Longest) {
    length = 0;
    for (const Encoding& e : encodings) length = std::max(length, e.size());
  }
  if (padding.pad_to_multiple_of > 0 && length % padding.pad_to_multiple_of > 0)
    length += padding.pad_to_multiple_of - length % padding.pad_to_multiple_of;
  for (Encoding& e : encodings) {
    if (e.size() >= length) continue;
    const size_t n = length - e.size();
    pad_vector(e.ids, n, padding.pad_id, padding.direction);
    pad_vector(e.type_ids, n, padding.pad_type_id, padding.direction);
    pad_vector(e.attention_mask, n, int64_t{0}, padding.direction);
    pad_vector(e.special_tokens_mask, n, int64_t{1}, padding.direction);
    pad_vector(e.offsets, n, std::pair<size_t, size_t>{0, 0}, padding.direction);
    pad_vector(e.sequence_ids, n, int8_t{-1}, padding.direction);
  }
}

WordPieceTokenizer::WordPieceTokenizer(BertNormalizer normalizer, WordPiece model,
                                       TemplateProcessing post_processor,
                                       std::vector<AddedToken> added_tokens, SpecialTokenTexts special_tokens)
    : normalizer_(std::move(normalizer)),
      model_(std::move(model)),
      post_processor_(std::move(post_processor)),
      added_tokens_(std::move(added_tokens)),
      special_tokens_(std::move(special_tokens)) {
  for (const TemplatePiece& piece : post_processor_.single) {
    BERTH_CHECK(piece.kind == TemplatePiece::Kind::SpecialToken || piece.sequence == 0,
                "the single-sequence template refers to $B, which only a pair has. Fix: use $A (or $0) only");
  }
  for (const auto* pieces : {&post_processor_.single, &post_processor_.pair}) {
    for (const TemplatePiece& piece : *pieces) {
      if (piece.kind != TemplatePiece::Kind::SpecialToken) continue;
      bool known = std::any_of(post_processor_.special_tokens.begin(), post_processor_.special_tokens.end(),
                               [&](const TemplateSpecialToken& t) { return t.name == piece.special_token; });
      BERTH_CHECK(known, "the template uses special token '", piece.special_token,
                  "' but its special_tokens list does not define it. Fix: add it with its ids");
    }
  }
  for (const TemplateSpecialToken& token : post_processor_.special_tokens) {
    BERTH_CHECK(token.ids.size() == token.tokens.size(), "template special token '", token.name, "' has ",
                token.ids.size(), " ids but ", token.tokens.size(), " tokens; they must pair up");
  }
  // Leftmost-longest matching tries the longer added tokens first.
  added_tokens_.erase(std::remove_if(added_tokens_.begin(), added_tokens_.end(),
                                     [](const AddedToken& t) { return t.content.empty(); }),
                      added_tokens_.end());
  std::stable_sort(added_tokens_.begin(), added_tokens_.end(), [](const AddedToken& a, const AddedToken& b) {
    return a.content.size() > b.content.size();
  });
  for (const AddedToken& token : added_tokens_)
    added_first_byte_[static_cast<unsigned char>(token.content[0])] = true;
}

WordPieceTokenizer WordPieceTokenizer::bert(WordPiece model, BertNormalizerOptions normalizer,
                                            SpecialTokenTexts special_tokens) {
  const auto required = [&](const std::string& text, const char* role) {
    std::optional<int32_t> id = model.token_to_id(text);
    BERTH_CHECK(id, "the ", role, " token '", text, "' is not in the vocabulary (", model.size(),
                " tokens). Fix: add it to vocab.txt or set ", role,
                "_token in tokenizer_config.json to a token ", "the vocabulary has");
    return static_cast<int64_t>(*id);
  };
  TemplateProcessing post = TemplateProcessing::bert(special_tokens.cls, required(special_tokens.cls, "cls"),
                                                     special_tokens.sep, required(special_tokens.sep, "sep"));
  // As transformers' BertTokenizerFast: every special token the vocabulary has is matched verbatim.
  std::vector<AddedToken> added;
  for (const std::string* text : {&special_tokens.pad, &special_tokens.unk, &special_tokens.cls,
                                  &special_tokens.sep, &special_tokens.mask}) {
    if (std::optional<int32_t> id = model.token_to_id(*text)) added.push_back({*text, *id, true});
  }
  return WordPieceTokenizer(BertNormalizer(normalizer), std::move(model), std::move(post), std::move(added),
                            std::move(special_tokens));
}

void WordPieceTokenizer::set_truncation(std::optional<TruncationOptions> truncation) {
  truncation_ = std::move(truncation);
}

void WordPieceTokenizer::set_padding(std::optional<PaddingOptions> padding) { padding_ = std::move(padding); }

int64_t WordPieceTokenizer::token_id(std::string_view token) const {
  for (const AddedToken& added : added_tokens_)
    if (added.content == token) return added.id;
  std::optional<int32_t> id = model_.token_to_id(token);
  BERTH_CHECK(id, "token '", token, "' is not in the vocabulary (", model_.size(),
              " tokens). Fix: use a token the vocabulary has");
  return *id;
}

void WordPieceTokenizer::encode_sequence(std::string_view text, SequenceTokens& out) const {
  Scratch& s = scratch();
  out.clear();
  s.normalized.clear();
  // Normalizes, pre-tokenizes and tokenizes text[begin, end), whose first character is `first_char`; returns
  // the index of the character after it.
  const auto encode_piece = [&](size_t begin, size_t end, uint32_t first_char) {
    const auto byte_start = static_cast<uint32_t>(s.normalized.text.size());
    const auto char_start = static_cast<uint32_t>(s.normalized.origin.size());
    uint32_t next_char = normalizer_.normalize(text.substr(begin, end - begin), first_char, s.normalized);
    s.words.clear();
    BertPreTokenizer::split(s.normalized, s.words, byte_start, char_start);
    const char* normalized = s.normalized.text.data();
    const uint32_t* origin = s.normalized.origin.data();
    for (const Word& word : s.words) {
      s.pieces.clear();
      const uint32_t bytes = word.byte_end - word.byte_begin;
      const uint32_t chars = word.char_end - word.char_begin;
      model_.tokenize(std::string_view(normalized + word.byte_begin, bytes), chars, s.pieces);
      const bool one_byte_chars = bytes == chars;
      uint32_t piece_char = word.char_begin;
      for (const WordPiecePiece& piece : s.pieces) {
        const uint32_t length =
            one_byte_chars ? piece.end - piece.begin
                           : static_cast<uint32_t>(utf8::count_chars(std::string_view(
                                 normalized + word.byte_begin + piece.begin, piece.end - piece.begin)));
        // A token spans from its first character's original character to its last one's.
        out.push(piece.id, origin[piece_char], origin[piece_char + length - 1] + 1);
        piece_char += length;
      }
    }
    return next_char;
  };

  size_t begin = 0;  // start of the text not yet encoded
  uint32_t begin_char = 0;
  if (!added_tokens_.empty()) {
    size_t pos = 0;
    while (pos < text.size()) {
      const auto byte = static_cast<unsigned char>(text[pos]);
      const AddedToken* match = nullptr;
      if (added_first_byte_[byte]) {
        for (const AddedToken& token : added_tokens_) {
          if (text.compare(pos, token.content.size(), token.content) == 0) {
            match = &token;
            break;
          }
        }
      }
      if (!match) {
        ++pos;
        continue;
      }
      const uint32_t match_char = pos > begin ? encode_piece(begin, pos, begin_char) : begin_char;
      const auto token_chars = static_cast<uint32_t>(utf8::count_chars(match->content));
      out.push(static_cast<int32_t>(match->id), match_char, match_char + token_chars);
      pos += match->content.size();
      begin = pos;
      begin_char = match_char + token_chars;
    }
  }
  if (begin < text.size()) encode_piece(begin, text.size(), begin_char);
}

Encoding WordPieceTokenizer::post_process(SequenceTokens& first, SequenceTokens* second,
                                          bool add_special_tokens) const {
  if (truncation_) {
    const size_t added = post_processor_.added_tokens(second != nullptr);
    size_t max_length = truncation_->max_length;
    // HF subtracts in unsigned arithmetic: below the special tokens' count it wraps around and silently
    // truncates nothing. berth refuses instead.
    if (add_special_tokens && added > 0)
      max_length = room_for_sequences(max_length, added, second != nullptr);
    truncate_encodings(first, second, max_length, *truncation_);
  }

  // Each field is written once, at its final size.
  const std::vector<TemplatePiece>& pieces = second ? post_processor_.pair : post_processor_.single;
  size_t total = first.size() + (second ? second->size() : 0);
  if (add_special_tokens) total += post_processor_.added_tokens(second != nullptr);
  Encoding out;
  out.ids.reserve(total);
  out.type_ids.reserve(total);
  out.attention_mask.reserve(total);
  out.special_tokens_mask.reserve(total);
  out.offsets.reserve(total);
  out.sequence_ids.reserve(total);
  for (const TemplatePiece& piece : pieces) {
    if (piece.kind == TemplatePiece::Kind::Sequence) {
      const SequenceTokens& sequence = piece.sequence == 0 ? first : *second;
      const size_t n = sequence.size();
      out.ids.insert(out.ids.end(), sequence.ids.begin() + sequence.begin,
                     sequence.ids.begin() + sequence.end);
      out.offsets.insert(out.offsets.end(), sequence.offsets.begin() + sequence.begin,
                         sequence.offsets.begin() + sequence.end);
      out.type_ids.insert(out.type_ids.end(), n, piece.type_id);
      out.attention_mask.insert(out.attention_mask.end(), n, 1);
      out.special_tokens_mask.insert(out.special_tokens_mask.end(), n, 0);
      out.sequence_ids.insert(out.sequence_ids.end(), n, static_cast<int8_t>(piece.sequence));
      continue;
    }
    if (!add_special_tokens) continue;
    for (const TemplateSpecialToken& token : post_processor_.special_tokens) {
      if (token.name != piece.special_token) continue;
      for (int64_t id : token.ids) {
        out.ids.push_back(id);
        out.type_ids.push_back(piece.type_id);
        out.attention_mask.push_back(1);
        out.special_tokens_mask.push_back(1);
        out.offsets.emplace_back(0, 0);
        out.sequence_ids.push_back(-1);
      }
    }
  }

  if (padding_) {
    std::vector<Encoding> one;
    one.push_back(std::move(out));
    pad_encodings(one, *padding_);
    out = std::move(one.front());
  }
  return out;
}

Encoding WordPieceTokenizer::encode(std::string_view text, std::optional<std::string_view> text_pair,
                                    bool add_special_tokens) const {
  Scratch& s = scratch();
  encode_sequence(text, s.first);
  if (!text_pair) return post_process(s.first, nullptr, add_special_tokens);
  encode_sequence(*text_pair, s.second);
  return post_process(s.first, &s.second, add_special_tokens);
}

std::vector<Encoding> WordPieceTokenizer::encode_batch(const std::vector<EncodeInput>& inputs,
                                                       bool add_special_tokens, size_t threads) const {
  std::vector<Encoding> out = encode_in_parallel(inputs.size(), threads, [&](size_t i) {
    const EncodeInput& input = inputs[i];
    std::optional<std::string_view> pair;
    if (input.text_pair) pair = *input.text_pair;
    return encode(input.text, pair, add_special_tokens);
  });
  if (padding_) pad_encodings(out, *padding_);
  return out;
}

}  // namespace berth::tokenizer
