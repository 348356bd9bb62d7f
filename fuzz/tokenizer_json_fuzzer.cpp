// libFuzzer target: tokenizer.json, every component (normalizers, pre-tokenizers, BPE/Unigram/WordPiece/
// WordLevel, added tokens, post-processor, decoder, truncation, padding). Any input is refused with a
// berth::Error, or makes a tokenizer that encodes and decodes a few texts without crashing, its arrays of one
// length and the ids of the text's tokens inside the vocabulary.
#include <string>
#include <string_view>
#include <vector>

#include "berth/core/error.h"
#include "berth/tokenizer/tokenizer.h"
#include "tokenizer_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<berth::tokenizer::Tokenizer> tokenizer;
  try {
    tokenizer.emplace(berth::tokenizer::Tokenizer::from_json_text(berth_fuzz::text_of(data, size), "fuzz"));
  } catch (const berth::Error&) {
    return 0;
  }
  berth_fuzz::exercise_tokenizer(*tokenizer);
  return 0;
}
