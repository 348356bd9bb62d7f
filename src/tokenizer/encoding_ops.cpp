// Encoding operations as HF tokenizers' encoding.rs and padding.rs do them, overflowing windows included.
#include "encoding_ops.h"

#include <algorithm>
#include <utility>

#include "berth/core/error.h"

namespace berth::tokenizer {
namespace {

// e's tokens [begin, end) as a new encoding, without overflowing windows.
Encoding window(const Encoding& e, size_t begin, size_t end) {
  const auto slice = [&](const auto& v) {
    return std::remove_cvref_t<decltype(v)>(v.begin() + static_cast<std::ptrdiff_t>(begin),
                                            v.begin() + static_cast<std::ptrdiff_t>(end));
  };
  Encoding out;
  if (e.word_ids.size() == e.ids.size()) out.word_ids = slice(e.word_ids);
  out.ids = slice(e.ids);
  out.type_ids = slice(e.type_ids);
  out.attention_mask = slice(e.attention_mask);
  out.special_tokens_mask = slice(e.special_tokens_mask);
  out.offsets = slice(e.offsets);
  out.sequence_ids = slice(e.sequence_ids);
  return out;
}

// The [begin, end) windows HF's truncate cuts a sequence of `size` tokens into, first the one it keeps.
std::vector<std::pair<size_t, size_t>> windows(size_t size, size_t length, size_t stride, Side direction) {
  std::vector<std::pair<size_t, size_t>> out;
  const size_t step = length - stride;
  if (direction == Side::Right) {
    for (size_t start = 0; start < size; start += step) {
      const size_t stop = std::min(start + length, size);
      out.emplace_back(start, stop);
      if (stop == size) break;
    }
  } else {
    for (size_t last = size; last-- > 0;) {  // HF steps down from the last token by `step`
      const size_t stop = last + 1, start = stop > length ? stop - length : 0;
      out.emplace_back(start, stop);
      if (start == 0 || last < step) break;
      last -= step - 1;
    }
  }
  return out;
}

// e with the tokens `keep` names, in order (keep_head's head and tail).
void keep_tokens(Encoding& e, const std::vector<size_t>& keep) {
  const auto pick = [&](auto& v) {
    std::remove_reference_t<decltype(v)> out;
    out.reserve(keep.size());
    for (size_t i : keep) out.push_back(v[i]);
    v = std::move(out);
  };
  if (e.word_ids.size() == e.ids.size()) pick(e.word_ids);
  pick(e.ids), pick(e.type_ids), pick(e.attention_mask), pick(e.special_tokens_mask), pick(e.offsets);
  pick(e.sequence_ids);
}

template <typename T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

template <typename T>
void pad_vector(std::vector<T>& v, size_t count, T value, Side side) {
  v.insert(side == Side::Right ? v.end() : v.begin(), count, value);
}

void pad_encoding(Encoding& e, size_t length, const PaddingOptions& padding) {
  for (Encoding& o : e.overflowing) pad_encoding(o, length, padding);
  if (e.size() >= length) return;
  const size_t n = length - e.size();
  if (e.word_ids.size() == e.ids.size()) pad_vector(e.word_ids, n, int64_t{-1}, padding.direction);
  pad_vector(e.ids, n, padding.pad_id, padding.direction);
  pad_vector(e.type_ids, n, padding.pad_type_id, padding.direction);
  pad_vector(e.attention_mask, n, int64_t{0}, padding.direction);
  pad_vector(e.special_tokens_mask, n, int64_t{1}, padding.direction);
  pad_vector(e.offsets, n, std::pair<size_t, size_t>{0, 0}, padding.direction);
  pad_vector(e.sequence_ids, n, int8_t{-1}, padding.direction);
}

}  // namespace

Encoding sequence_encoding(const std::vector<SourceToken>& tokens, int64_t type_id) {
  Encoding e;
  const size_t n = tokens.size();
  e.ids.resize(n);
  e.offsets.resize(n);
  e.word_ids.resize(n);
  for (size_t i = 0; i < n; ++i) {
    e.ids[i] = tokens[i].id;
    e.offsets[i] = {tokens[i].begin, tokens[i].end};
    e.word_ids[i] = tokens[i].word;
  }
  e.type_ids.assign(n, type_id);
  e.attention_mask.assign(n, 1);
  e.special_tokens_mask.assign(n, 0);
  e.sequence_ids.assign(n, static_cast<int8_t>(type_id));
  return e;
}

void truncate_encoding(Encoding& e, size_t length, const TruncationOptions& options) {
  if (length >= e.size()) return;
  if (options.keep_head) {
    BERTH_CHECK(!options.return_overflowing,
                "truncation keep_head (head+tail) drops the middle of a text and ",
                "cannot return overflowing windows. Fix: turn off one of keep_head and return_overflowing");
    std::vector<size_t> keep;
    const size_t head = std::min(*options.keep_head, length);
    for (size_t i = 0; i < head; ++i) keep.push_back(i);
    for (size_t i = e.size() - (length - head); i < e.size(); ++i) keep.push_back(i);
    return keep_tokens(e, keep);
  }
  if (!options.return_overflowing) {
    const size_t from = options.direction == Side::Right ? 0 : e.size() - length;
    e = window(e, from, from + length);
    return;
  }
  if (length == 0) {  // HF: everything overflows
    Encoding all = std::move(e);
    e = Encoding();
    e.overflowing.push_back(std::move(all));
    return;
  }
  BERTH_CHECK(options.stride < length, "truncation stride ", options.stride, " must be below the ", length,
              " tokens each window keeps (max_length less the special tokens); HF tokenizers panics here. ",
              "Fix: lower the stride or raise max_length");
  const auto parts = windows(e.size(), length, options.stride, options.direction);
  Encoding kept = window(e, parts[0].first, parts[0].second);
  for (size_t i = 1; i < parts.size(); ++i)
    kept.overflowing.push_back(window(e, parts[i].first, parts[i].second));
  e = std::move(kept);
}

void merge_encodings(Encoding& self, Encoding pair) {
  if (self.ids.empty() && self.overflowing.empty()) {  // HF's result is then the pair itself
    self = std::move(pair);
    return;
  }
  std::vector<Encoding> overflowing;
  for (const Encoding& mine : self.overflowing) {
    Encoding combined = mine;
    merge_encodings(combined, pair);
    overflowing.push_back(std::move(combined));
    for (const Encoding& theirs : pair.overflowing) {
      Encoding both = mine;
      merge_encodings(both, theirs);
      overflowing.push_back(std::move(both));
    }
  }
  for (const Encoding& theirs : pair.overflowing) {
    Encoding combined = self;
    merge_encodings(combined, theirs);
    overflowing.push_back(std::move(combined));
  }
  append(self.ids, pair.ids);
  append(self.type_ids, pair.type_ids);
  append(self.attention_mask, pair.attention_mask);
  append(self.special_tokens_mask, pair.special_tokens_mask);
  append(self.offsets, pair.offsets);
  append(self.sequence_ids, pair.sequence_ids);
  // An encoding made without words (by hand) counts as special tokens: -1.
  self.word_ids.resize(self.ids.size() - pair.ids.size(), -1);
  pair.word_ids.resize(pair.ids.size(), -1);
  append(self.word_ids, pair.word_ids);
  self.overflowing = std::move(overflowing);
}

Encoding special_encoding(const std::vector<int64_t>& ids, int64_t type_id) {
  Encoding e;
  e.ids = ids;
  e.type_ids.assign(ids.size(), type_id);
  e.attention_mask.assign(ids.size(), 1);
  e.special_tokens_mask.assign(ids.size(), 1);
  e.offsets.assign(ids.size(), {0, 0});
  e.sequence_ids.assign(ids.size(), -1);
  e.word_ids.assign(ids.size(), -1);
  return e;
}

void set_sequence_id(Encoding& e, int8_t id) {
  e.sequence_ids.assign(e.ids.size(), id);
  for (Encoding& o : e.overflowing) set_sequence_id(o, id);
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
  for (Encoding& e : encodings) pad_encoding(e, length, padding);
}

}  // namespace berth::tokenizer
