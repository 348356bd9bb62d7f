// Normalizer: one step of tokenizer.json's "normalizer" (NFC, Replace, Prepend, Lowercase, ...), rewriting
// the text while each code point keeps the original range it came from.
#pragma once

#include <memory>
#include <string>

#include "berth/tokenizer/aligned_text.h"

namespace berth::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(AlignedText& text) const = 0;
};

}  // namespace berth::tokenizer
