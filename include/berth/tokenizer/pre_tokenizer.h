// PreTokenizer: one step of tokenizer.json's "pre_tokenizer" (Split, ByteLevel, Metaspace, Whitespace, ...),
// cutting the normalized text into the pieces the model tokenizes one by one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "berth/tokenizer/aligned_text.h"
#include "berth/tokenizer/byte_level.h"  // byte_char

namespace berth::tokenizer {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their splits, in order; empty pieces are dropped, as HF drops them.
  virtual void split(std::vector<AlignedText>& pieces) const = 0;
};

}  // namespace berth::tokenizer
