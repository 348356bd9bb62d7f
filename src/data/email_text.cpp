// Raw email -> classification text: headers, MIME structure, transfer encodings, charsets, HTML.
#include "berth/data/email_text.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "berth/data/charset.h"
#include "berth/data/html_text.h"
#include "berth/data/transfer_encoding.h"
#include "core/text.h"

namespace berth::data {
namespace {

constexpr int kMaxDepth = 8;

using text::to_lower;
using text::trim;

struct Header {
  std::string name;   // lowercase
  std::string value;  // unfolded, trimmed
};

// A MIME entity: its headers and its body (text is LF-only; see email_to_text).
struct Entity {
  std::vector<Header> headers;
  std::string_view body;

  std::optional<std::string_view> header(std::string_view name) const {
    for (const Header& h : headers)
      if (h.name == name) return std::string_view(h.value);
    return std::nullopt;
  }
};

// "Name: value" with a name of printable ASCII other than ':' and space (RFC 5322's ftext).
std::optional<size_t> header_colon(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == ':') return i > 0 ? std::optional<size_t>(i) : std::nullopt;
    if (c <= 32 || c >= 127) return std::nullopt;
  }
  return std::nullopt;
}

// Splits an entity at its first empty line. A first line that is no header means there are no headers: the
// whole text is the body. The mbox "From " separator line is skipped.
Entity parse_entity(std::string_view text) {
  Entity entity;
  size_t pos = 0;
  if (text.substr(0, 5) == "From ") {
    const size_t end = text.find('\n');
    pos = end == std::string_view::npos ? text.size() : end + 1;
  }
  {
    const size_t end = std::min(text.find('\n', pos), text.size());
    if (pos < text.size() && !header_colon(text.substr(pos, end - pos))) {
      entity.body = text.substr(pos);
      return entity;
    }
  }
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = std::min(end + 1, text.size());
    if (line.empty()) break;
    if ((line[0] == ' ' || line[0] == '\t')) {  // folded continuation of the previous header
      if (!entity.headers.empty()) {
        entity.headers.back().value += ' ';
        entity.headers.back().value += trim(line);
      }
      continue;
    }
    if (auto colon = header_colon(line))
      entity.headers.push_back(
          {to_lower(line.substr(0, *colon)), std::string(trim(line.substr(*colon + 1)))});
  }
  entity.body = text.substr(pos);
  return entity;
}

// "text/plain; charset=\"utf-8\"; format=flowed" -> type "text/plain" and parameters by lowercase name.
struct ContentType {
  std::string type = "text/plain";
  std::vector<std::pair<std::string, std::string>> params;

  std::string param(std::string_view name) const {
    for (const auto& [key, value] : params)
      if (key == name) return value;
    return "";
  }
};

ContentType parse_content_type(std::optional<std::string_view> header) {
  ContentType content_type;
  if (!header) return content_type;
  std::string_view text = *header;
  size_t semicolon = text.find(';');
  std::string type = to_lower(trim(text.substr(0, semicolon)));
  if (type.find('/') != std::string::npos) content_type.type = type;
  size_t pos = semicolon == std::string_view::npos ? text.size() : semicolon + 1;
  while (pos < text.size()) {
    const size_t eq = text.find('=', pos);
    if (eq == std::string_view::npos) break;
    std::string name = to_lower(trim(text.substr(pos, eq - pos)));
    size_t i = eq + 1;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::string value;
    if (i < text.size() && text[i] == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        value += text[i];
      }
      const size_t next = text.find(';', i);
      pos = next == std::string_view::npos ? text.size() : next + 1;
    } else {
      const size_t next = text.find(';', i);
      value = std::string(
          trim(text.substr(i, next == std::string_view::npos ? std::string_view::npos : next - i)));
      pos = next == std::string_view::npos ? text.size() : next + 1;
    }
    content_type.params.emplace_back(std::move(name), std::move(value));
  }
  return content_type;
}

std::string decode_body(const Entity& entity) {
  const std::string encoding = to_lower(trim(entity.header("content-transfer-encoding").value_or("")));
  if (encoding == "quoted-printable") return decode_quoted_printable(entity.body);
  if (encoding == "base64") return decode_base64(entity.body);
  return std::string(entity.body);
}

// The parts between "--boundary" lines; the preamble before the first and the epilogue after "--boundary--"
// are dropped. No boundary line at all -> no parts.
std::vector<std::string_view> split_multipart(std::string_view body, const std::string& boundary) {
  std::vector<std::string_view> parts;
  const std::string delimiter = "--" + boundary;
  std::optional<size_t> part_start;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(pos, end - pos);
    if (line.substr(0, delimiter.size()) == delimiter) {
      std::string_view rest = trim(line.substr(delimiter.size()));
      const bool closing = rest.substr(0, 2) == "--";
      if (rest.empty() || closing) {
        // The line break before a delimiter belongs to the delimiter (RFC 2046).
        if (part_start)
          parts.push_back(body.substr(*part_start, pos > *part_start ? pos - 1 - *part_start : 0));
        if (closing) return parts;
        part_start = std::min(end + 1, body.size());
      }
    }
    pos = end + 1;
  }
  if (part_start) parts.push_back(body.substr(*part_start));
  return parts;
}

enum class TextKind { None, Html, Plain };

struct PartText {
  std::string text;
  TextKind kind = TextKind::None;
};

PartText entity_text(const Entity& entity, int depth);

PartText multipart_text(const Entity& entity, const ContentType& type, int depth) {
  const std::string boundary = type.param("boundary");
  std::vector<std::string_view> raw_parts;
  if (!boundary.empty()) raw_parts = split_multipart(entity.body, boundary);
  if (raw_parts.empty())
    return {to_utf8(entity.body, type.param("charset")), TextKind::Plain};  // broken: keep it

  std::vector<PartText> parts;
  for (std::string_view raw : raw_parts) {
    PartText part = entity_text(parse_entity(raw), depth + 1);
    if (part.kind != TextKind::None && !part.text.empty()) parts.push_back(std::move(part));
  }
  if (parts.empty()) return {};
  if (type.type == "multipart/alternative") {
    auto plain =
        std::find_if(parts.begin(), parts.end(), [](const PartText& p) { return p.kind == TextKind::Plain; });
    return plain != parts.end() ? std::move(*plain) : std::move(parts.front());
  }
  PartText joined;
  joined.kind = TextKind::Html;
  for (PartText& part : parts) {
    if (!joined.text.empty()) joined.text += '\n';
    joined.text += part.text;
    if (part.kind == TextKind::Plain) joined.kind = TextKind::Plain;
  }
  return joined;
}

PartText entity_text(const Entity& entity, int depth) {
  if (depth > kMaxDepth) return {};
  const std::string disposition = to_lower(entity.header("content-disposition").value_or(""));
  if (disposition.rfind("attachment", 0) == 0) return {};
  const ContentType type = parse_content_type(entity.header("content-type"));
  if (type.type.rfind("multipart/", 0) == 0) return multipart_text(entity, type, depth);
  if (type.type == "message/rfc822") {
    return entity_text(parse_entity(entity.body), depth + 1);
  }
  if (type.type == "text/html")
    return {html_to_text(to_utf8(decode_body(entity), type.param("charset"))), TextKind::Html};
  if (type.type == "text/plain" || type.type == "text/enriched") {
    return {to_utf8(decode_body(entity), type.param("charset")), TextKind::Plain};
  }
  return {};
}

// Trailing spaces off every line, runs of blank lines down to one, both ends trimmed.
std::string tidy_lines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t blank_lines = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    pos = end + 1;
    if (line.empty()) {
      ++blank_lines;
      continue;
    }
    if (!out.empty()) out += blank_lines > 0 ? "\n\n" : "\n";
    blank_lines = 0;
    out += line;
  }
  return out;
}

}  // namespace

std::string decode_header_words(std::string_view value) {
  std::string out;
  std::string literal;  // raw text since the last encoded word: usually ASCII, sometimes 8-bit bytes
  bool after_word = false;
  size_t pos = 0;
  while (pos < value.size()) {
    if (value.compare(pos, 2, "=?") == 0) {
      // =?charset?X?text?=
      const size_t q1 = value.find('?', pos + 2);
      const size_t q2 = q1 == std::string_view::npos ? q1 : value.find('?', q1 + 1);
      const size_t end = q2 == std::string_view::npos ? q2 : value.find("?=", q2 + 1);
      const char encoding =
          q2 == q1 + 2 ? static_cast<char>(std::toupper(static_cast<unsigned char>(value[q1 + 1]))) : 0;
      if (end != std::string_view::npos && (encoding == 'B' || encoding == 'Q')) {
        std::string charset(value.substr(pos + 2, q1 - pos - 2));
        charset = charset.substr(0, charset.find('*'));  // RFC 2231 language suffix
        std::string encoded(value.substr(q2 + 1, end - q2 - 1));
        std::string bytes;
        if (encoding == 'B') {
          bytes = decode_base64(encoded);
        } else {
          std::replace(encoded.begin(), encoded.end(), '_', ' ');
          bytes = decode_quoted_printable(encoded);
        }
        // Whitespace between two encoded words is dropped (RFC 2047 section 6.2).
        if (!(after_word && trim(literal).empty())) out += to_utf8(literal, "");
        literal.clear();
        out += to_utf8(bytes, charset);
        pos = end + 2;
        after_word = true;
        continue;
      }
    }
    literal += value[pos++];
  }
  out += to_utf8(literal, "");
  return out;
}

std::string email_to_text(std::string_view raw_email) {
  // Work on LF line ends only: CRLF and lone CR become LF.
  std::string text;
  text.reserve(raw_email.size());
  for (size_t i = 0; i < raw_email.size(); ++i) {
    if (raw_email[i] == '\r') {
      text += '\n';
      if (i + 1 < raw_email.size() && raw_email[i + 1] == '\n') ++i;
    } else {
      text += raw_email[i];
    }
  }
  const Entity email = parse_entity(text);
  const std::string subject = tidy_lines(decode_header_words(email.header("subject").value_or("")));
  const std::string body = tidy_lines(entity_text(email, 0).text);
  if (subject.empty()) return body;
  if (body.empty()) return subject;
  return subject + "\n" + body;
}

}  // namespace berth::data
