// libFuzzer target: the email reader (RFC 822 headers, MIME multiparts, quoted-printable, base64, charsets,
// RFC 2047 words, HTML). Its promise is stronger than a refusal: any bytes give UTF-8 text and no exception.
#include <cctype>
#include <string>
#include <string_view>

#include "berth/data/charset.h"
#include "berth/data/email_text.h"
#include "berth/data/html_text.h"
#include "berth/data/transfer_encoding.h"
#include "fuzz_support.h"

namespace {

constexpr const char* kTarget = "email_fuzzer";

bool is_utf8(const std::string& text) { return berth::data::sanitize_utf8(text) == text; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = berth_fuzz::text_of(data, size);
  const std::string text = berth::data::email_to_text(input);
  berth_fuzz::require(is_utf8(text), kTarget, "email text is UTF-8");
  // tidy_lines: no blank line first, no trailing whitespace on the last line.
  berth_fuzz::require(
      text.empty() || (text.front() != '\n' && !std::isspace(static_cast<unsigned char>(text.back()))),
      kTarget, "email text is tidied");
  berth_fuzz::require(is_utf8(berth::data::decode_header_words(input)), kTarget, "a decoded header is UTF-8");
  const std::string sanitized = berth::data::sanitize_utf8(input);
  berth_fuzz::require(is_utf8(berth::data::html_to_text(sanitized)), kTarget, "HTML text of UTF-8 is UTF-8");
  (void)berth::data::decode_html_entities(sanitized);
  (void)berth::data::decode_quoted_printable(input);
  (void)berth::data::decode_base64(input);
  // The first line names a charset, the rest is decoded as it.
  const auto [charset, body] = berth_fuzz::split_two(input, "\n");
  for (std::string_view name : {charset, std::string_view("windows-1252"), std::string_view("us-ascii")})
    berth_fuzz::require(is_utf8(berth::data::to_utf8(body, name)), kTarget, "to_utf8 gives UTF-8");
  return 0;
}
