// Turning the bytes of an email part, in its declared charset, into valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace berth::data {

// Appends the UTF-8 encoding of a code point; surrogates and values above U+10FFFF become U+FFFD.
void append_utf8(std::string& out, uint32_t code_point);

// `bytes` with every ill-formed UTF-8 sequence (overlong, surrogate, truncated, beyond U+10FFFF) replaced by
// U+FFFD, one per maximal ill-formed subpart as the WHATWG decoder does.
std::string sanitize_utf8(std::string_view bytes);

// Decodes `bytes` declared as `charset` (case-insensitive) to UTF-8:
// - iso-8859-1 / latin1 / windows-1252 / cp1252 and their aliases: windows-1252, as WHATWG decodes all of
// them
//   (mail declared latin-1 routinely uses 0x80-0x9F for curly quotes and dashes);
// - us-ascii and no charset: kept when valid UTF-8, else decoded as windows-1252 (8-bit text mislabelled
// ascii);
// - utf-8 and anything else: passed through sanitize_utf8.
std::string to_utf8(std::string_view bytes, std::string_view charset);

}  // namespace berth::data
