// Decoding MIME Content-Transfer-Encodings: quoted-printable and base64 (RFC 2045), lenient as mail readers
// are.
#pragma once

#include <string>
#include <string_view>

namespace berth::data {

// "=XX" (hex, either case) becomes the byte; "=" at the end of a line (trailing spaces allowed) is a soft
// line break and disappears with the line end; an "=" followed by anything else is kept as it is.
std::string decode_quoted_printable(std::string_view text);

// Characters outside the base64 alphabet (line breaks, spaces, garbage) are skipped; decoding stops at the
// first '='. A final incomplete group yields the whole bytes it holds.
std::string decode_base64(std::string_view text);

}  // namespace berth::data
