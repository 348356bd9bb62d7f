// Records of CSV (RFC 4180) and TSV text, each with the line it starts on for error messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace berth::data {

struct DelimitedRecord {
  size_t line = 0;  // 1-based line where the record starts (a quoted field may span several)
  std::vector<std::string> fields;
};

enum class Quoting {
  Rfc4180,  // CSV: "..." fields may hold the delimiter, newlines and "" for a quote
  None,     // TSV as IANA defines it: fields hold no tabs or newlines and quotes are ordinary characters
};

// Splits `text` into records. Lines end with LF, CRLF or CR; a UTF-8 byte order mark at the start is skipped;
// empty lines are skipped. With Rfc4180, a quote inside an unquoted field is kept as an ordinary character;
// an unterminated quoted field, or anything but the delimiter or a line end after a closing quote, throws
// berth::Error "<source>:<line>: ..." with the fix. Column counts are the caller's to check.
std::vector<DelimitedRecord> parse_delimited(std::string_view text, char delimiter, Quoting quoting,
                                             std::string_view source);

}  // namespace berth::data
