// The error for text that is not valid UTF-8.
#include "tokenizer/utf8.h"

#include <cstdio>

namespace berth::tokenizer::utf8 {

void fail_invalid(std::string_view text, size_t offset, const char* what) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[offset]));
  BERTH_FAIL("text is not valid UTF-8: byte ", hex, " at byte offset ", offset, " ", what,
             ". The tokenizer reads UTF-8 text only (as HF tokenizers does). Fix: convert the input to UTF-8 "
             "(e.g. iconv -f latin1 -t utf-8) or replace the invalid bytes");
}

}  // namespace berth::tokenizer::utf8
