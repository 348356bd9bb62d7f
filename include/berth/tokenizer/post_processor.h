// PostProcessor: tokenizer.json's "post_processor" (TemplateProcessing, BertProcessing, RobertaProcessing,
// ByteLevel, Sequence): the special tokens around one sequence or a pair, their type ids, offset trimming.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "berth/tokenizer/encoding.h"

namespace berth::tokenizer {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // The special tokens it adds around one sequence (pair = false) or a pair.
  virtual size_t added_tokens(bool pair) const = 0;
  // HF's process_encodings: each sequence's encoding (type ids 0 and 1 as encoded) rewritten in place, or
  // replaced by the template's parts; the caller concatenates what is left.
  virtual void process_encodings(std::vector<Encoding>& encodings, bool add_special_tokens) const = 0;
};

// first (and second) through `processor` (null: plain concatenation), concatenated.
Encoding post_process(const PostProcessor* processor, Encoding first, std::optional<Encoding> second,
                      bool add_special_tokens);

// A token's text by id (for ByteLevel's offset trimming).
using TokenText = std::function<std::string(int64_t id)>;

}  // namespace berth::tokenizer
