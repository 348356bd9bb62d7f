// Extended grapheme clusters as HF tokenizers draws them (the unicode-segmentation crate, Unicode 17):
// utf8proc's rules run on the crate's classes, plus rule GB9c (private to the library).
#pragma once

#include <cstddef>
#include <cstdint>

#include "berth/tokenizer/aligned_text.h"

namespace berth::tokenizer {

class GraphemeClusters {
 public:
  // The end of the cluster that starts at chars[begin] (of `size`). Call it for begin = 0, then for each end
  // it returns, in order: it carries the rules' state from one cluster to the next.
  size_t cluster_end(const AlignedText::Char* chars, size_t size, size_t begin);

 private:
  int32_t state_ = 0;  // utf8proc's: the class of the code point before, emoji and regional-indicator runs
};

}  // namespace berth::tokenizer
