// Reading `{"text": ..., "text_pair"?: ...}` JSONL, the input of `berth tokenize` and `berth predict`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "berth/tokenizer/encode_options.h"

namespace berth::data {

struct TextInputLine {
  size_t number = 0;  // 1-based line in the file, for messages
  tokenizer::EncodeInput input;
};

// Every non-blank line in file order; a line that is not such an object throws berth::Error naming
// path:line, what was found and the expected shape.
std::vector<TextInputLine> read_text_inputs(const std::string& path);

std::vector<tokenizer::EncodeInput> encode_inputs(const std::vector<TextInputLine>& lines);

}  // namespace berth::data
