// PreTokenizer: one step of tokenizer.json's "pre_tokenizer" (Split, ByteLevel, Metaspace, Whitespace, ...),
// cutting the normalized text into the pieces the model tokenizes one by one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "berth/tokenizer/aligned_text.h"
#include "berth/tokenizer/byte_level.h"  // byte_char

namespace berth::tokenizer {

// Text and its pieces: [begin, end) code point indices into text.chars, in order, non-empty, not overlapping.
// Pieces are spans of one buffer, not copies: a step that only cuts leaves the text alone.
struct PieceText {
  using Span = std::pair<uint32_t, uint32_t>;
  AlignedText text;
  std::vector<Span> pieces;

  // The whole text as one piece (none when it is empty).
  static PieceText whole(AlignedText text);
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each piece by its splits, in order, dropping empty ones as HF does; may rewrite the text (a
  // byte-level mapping, a prepended marker) as long as the pieces follow it.
  virtual void split(PieceText& pieces) const = 0;
};

}  // namespace berth::tokenizer
