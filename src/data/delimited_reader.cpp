// CSV/TSV record splitting with line numbers.
#include "berth/data/delimited_reader.h"

#include "berth/core/error.h"

namespace berth::data {
namespace {

// How the character at `pos` ends a line: 0 when it does not, else the length of the line end (LF, CR, CRLF).
size_t line_end_length(std::string_view text, size_t pos) {
  if (text[pos] == '\n') return 1;
  if (text[pos] == '\r') return (pos + 1 < text.size() && text[pos + 1] == '\n') ? 2 : 1;
  return 0;
}

std::string printable(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte < 0x20 || byte >= 0x7f) {
    const char* hex = "0123456789ABCDEF";
    return std::string("byte 0x") + hex[byte >> 4] + hex[byte & 15];
  }
  return std::string("'") + c + "'";
}

}  // namespace

std::vector<DelimitedRecord> parse_delimited(std::string_view text, char delimiter, Quoting quoting,
                                             std::string_view source) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::vector<DelimitedRecord> records;
  size_t pos = 0;
  size_t line = 1;
  while (pos < text.size()) {
    if (size_t end = line_end_length(text, pos)) {  // an empty line
      pos += end;
      ++line;
      continue;
    }
    DelimitedRecord record;
    record.line = line;
    // One field per iteration; the record ends at a line end or the end of the text.
    while (true) {
      std::string field;
      if (quoting == Quoting::Rfc4180 && pos < text.size() && text[pos] == '"') {
        const size_t open_line = line;
        ++pos;
        while (true) {
          BERTH_CHECK(
              pos < text.size(), source, ":", open_line, ": unterminated quoted field (field ",
              record.fields.size() + 1,
              " opens with '\"' on this line and no closing quote follows before the end of the file). "
              "Fix: close the quote; a quote inside a quoted field is written \"\"");
          if (text[pos] == '"') {
            if (pos + 1 < text.size() && text[pos + 1] == '"') {
              field += '"';
              pos += 2;
              continue;
            }
            ++pos;
            break;
          }
          if (size_t end = line_end_length(text, pos)) {
            field.append(text.substr(pos, end));
            pos += end;
            ++line;
            continue;
          }
          field += text[pos++];
        }
        BERTH_CHECK(pos >= text.size() || text[pos] == delimiter || line_end_length(text, pos) > 0, source,
                    ":", line, ": expected '",
                    delimiter == '\t' ? std::string("\\t") : std::string(1, delimiter),
                    "' or the end of the line after the closing quote of field ", record.fields.size() + 1,
                    ", found ", printable(text[pos]),
                    ". Fix: quote the whole field, and write a quote inside it as \"\"");
      } else {
        while (pos < text.size() && text[pos] != delimiter && line_end_length(text, pos) == 0)
          field += text[pos++];
      }
      record.fields.push_back(std::move(field));
      if (pos < text.size() && text[pos] == delimiter) {
        ++pos;
        continue;
      }
      break;
    }
    if (pos < text.size()) {
      pos += line_end_length(text, pos);
      ++line;
    }
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace berth::data
