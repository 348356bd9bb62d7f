// HTML to plain text: tags out, entities decoded, whitespace collapsed.
#include "berth/data/html_text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <unordered_map>

#include "berth/data/charset.h"

namespace berth::data {
namespace {

// HTML 4's Latin-1 entities, U+00A0..U+00FF in order; HTML5 also accepts these without the ';'.
constexpr std::array<std::string_view, 96> kLatin1Entities = {
    "nbsp",   "iexcl",  "cent",   "pound",  "curren", "yen",    "brvbar", "sect",   "uml",    "copy",
    "ordf",   "laquo",  "not",    "shy",    "reg",    "macr",   "deg",    "plusmn", "sup2",   "sup3",
    "acute",  "micro",  "para",   "middot", "cedil",  "sup1",   "ordm",   "raquo",  "frac14", "frac12",
    "frac34", "iquest", "Agrave", "Aacute", "Acirc",  "Atilde", "Auml",   "Aring",  "AElig",  "Ccedil",
    "Egrave", "Eacute", "Ecirc",  "Euml",   "Igrave", "Iacute", "Icirc",  "Iuml",   "ETH",    "Ntilde",
    "Ograve", "Oacute", "Ocirc",  "Otilde", "Ouml",   "times",  "Oslash", "Ugrave", "Uacute", "Ucirc",
    "Uuml",   "Yacute", "THORN",  "szlig",  "agrave", "aacute", "acirc",  "atilde", "auml",   "aring",
    "aelig",  "ccedil", "egrave", "eacute", "ecirc",  "euml",   "igrave", "iacute", "icirc",  "iuml",
    "eth",    "ntilde", "ograve", "oacute", "ocirc",  "otilde", "ouml",   "divide", "oslash", "ugrave",
    "uacute", "ucirc",  "uuml",   "yacute", "thorn",  "yuml"};

struct EntityTable {
  std::unordered_map<std::string_view, uint32_t> with_semicolon;
  std::unordered_map<std::string_view, uint32_t> legacy;  // also valid without ';'
};

const EntityTable& entity_table() {
  static const EntityTable table = [] {
    EntityTable t;
    for (size_t i = 0; i < kLatin1Entities.size(); ++i) t.legacy[kLatin1Entities[i]] = 0xA0 + i;
    for (auto [name, cp] : std::initializer_list<std::pair<std::string_view, uint32_t>>{{"amp", '&'},
                                                                                        {"lt", '<'},
                                                                                        {"gt", '>'},
                                                                                        {"quot", '"'},
                                                                                        {"AMP", '&'},
                                                                                        {"LT", '<'},
                                                                                        {"GT", '>'},
                                                                                        {"QUOT", '"'},
                                                                                        {"COPY", 0xA9},
                                                                                        {"REG", 0xAE}})
      t.legacy[name] = cp;
    t.with_semicolon = t.legacy;
    for (auto [name, cp] : std::initializer_list<std::pair<std::string_view, uint32_t>>{
             {"apos", '\''},     {"ensp", 0x2002},   {"emsp", 0x2003},   {"thinsp", 0x2009},
             {"ndash", 0x2013},  {"mdash", 0x2014},  {"lsquo", 0x2018},  {"rsquo", 0x2019},
             {"sbquo", 0x201A},  {"ldquo", 0x201C},  {"rdquo", 0x201D},  {"bdquo", 0x201E},
             {"dagger", 0x2020}, {"Dagger", 0x2021}, {"bull", 0x2022},   {"hellip", 0x2026},
             {"permil", 0x2030}, {"lsaquo", 0x2039}, {"rsaquo", 0x203A}, {"euro", 0x20AC},
             {"trade", 0x2122},  {"larr", 0x2190},   {"rarr", 0x2192},   {"uarr", 0x2191},
             {"darr", 0x2193},   {"hearts", 0x2665}, {"OElig", 0x152},   {"oelig", 0x153},
             {"Scaron", 0x160},  {"scaron", 0x161},  {"Yuml", 0x178},    {"fnof", 0x192},
             {"circ", 0x2C6},    {"tilde", 0x2DC},   {"zwnj", 0x200C},   {"zwj", 0x200D}})
      t.with_semicolon[name] = cp;
    return t;
  }();
  return table;
}

// windows-1252's meaning of 0x80..0x9F, which HTML5 gives numeric references in that range.
constexpr std::array<uint16_t, 32> kNumericC1 = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Decodes the reference starting at text[pos] == '&' into `out`; returns the position after it, or pos + 1
// with a literal '&' when it is not a reference.
size_t decode_reference(std::string_view text, size_t pos, std::string& out) {
  size_t i = pos + 1;
  if (i < text.size() && text[i] == '#') {
    ++i;
    const bool hex = i < text.size() && (text[i] == 'x' || text[i] == 'X');
    if (hex) ++i;
    const size_t digits_start = i;
    uint64_t value = 0;
    while (i < text.size() && (hex ? std::isxdigit(static_cast<unsigned char>(text[i]))
                                   : std::isdigit(static_cast<unsigned char>(text[i])))) {
      const int digit = std::isdigit(static_cast<unsigned char>(text[i]))
                            ? text[i] - '0'
                            : std::tolower(static_cast<unsigned char>(text[i])) - 'a' + 10;
      value = std::min<uint64_t>(value * (hex ? 16 : 10) + static_cast<uint64_t>(digit), 0x110000);
      ++i;
    }
    if (i == digits_start) {
      out += '&';
      return pos + 1;
    }
    if (i < text.size() && text[i] == ';') ++i;
    uint32_t cp = static_cast<uint32_t>(value);
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    if (cp >= 0x80 && cp < 0xA0) cp = kNumericC1[cp - 0x80];
    append_utf8(out, cp);
    return i;
  }
  while (i < text.size() && is_alnum(text[i]) && i - pos <= 32) ++i;
  const std::string_view name = text.substr(pos + 1, i - pos - 1);
  const EntityTable& table = entity_table();
  if (i < text.size() && text[i] == ';') {
    auto it = table.with_semicolon.find(name);
    if (it != table.with_semicolon.end()) {
      append_utf8(out, it->second);
      return i + 1;
    }
  } else if (auto it = table.legacy.find(name); it != table.legacy.end()) {
    append_utf8(out, it->second);
    return i;
  }
  out += '&';
  return pos + 1;
}

bool starts_with_ci(std::string_view text, size_t pos, std::string_view prefix) {
  if (text.size() - pos < prefix.size()) return false;
  for (size_t k = 0; k < prefix.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(text[pos + k])) != prefix[k]) return false;
  return true;
}

// Position of the first case-insensitive `needle` (lowercase) at or after `pos`, or npos.
size_t find_ci(std::string_view text, size_t pos, std::string_view needle) {
  for (; pos + needle.size() <= text.size(); ++pos)
    if (std::tolower(static_cast<unsigned char>(text[pos])) == needle[0] && starts_with_ci(text, pos, needle))
      return pos;
  return std::string_view::npos;
}

// The '>' closing a tag that starts before `pos`, skipping quoted attribute values; npos when none.
size_t tag_end(std::string_view text, size_t pos) {
  char quote = 0;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '>') {
      return pos;
    }
  }
  return std::string_view::npos;
}

bool is_block_tag(std::string_view name) {
  static constexpr std::array<std::string_view, 22> kBlock = {
      "br", "p",  "div", "li", "tr", "h1",    "h2",         "h3",    "h4",  "h5", "h6",
      "ul", "ol", "dl",  "dt", "dd", "table", "blockquote", "title", "pre", "hr", "center"};
  return std::find(kBlock.begin(), kBlock.end(), name) != kBlock.end();
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Collapses whitespace runs (a run with a line break -> "\n", else " ") and trims both ends. U+00A0 counts as
// a space: &nbsp; is how HTML mail spaces words.
std::string collapse_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_run = false, run_has_newline = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool nbsp = text[i] == '\xC2' && i + 1 < text.size() && text[i + 1] == '\xA0';
    if (is_space(text[i]) || nbsp) {
      in_run = true;
      run_has_newline |= text[i] == '\n';
      if (nbsp) ++i;
      continue;
    }
    if (in_run && !out.empty()) out += run_has_newline ? '\n' : ' ';
    in_run = run_has_newline = false;
    out += text[i];
  }
  return out;
}

}  // namespace

std::string decode_html_entities(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text[pos] == '&') {
      pos = decode_reference(text, pos, out);
    } else {
      out += text[pos++];
    }
  }
  return out;
}

std::string html_to_text(std::string_view html) {
  std::string out;
  out.reserve(html.size());
  size_t pos = 0;
  while (pos < html.size()) {
    const char c = html[pos];
    if (c == '&') {
      pos = decode_reference(html, pos, out);
      continue;
    }
    if (c != '<') {
      out += c;
      ++pos;
      continue;
    }
    if (html.compare(pos, 4, "<!--") == 0) {
      const size_t end = html.find("-->", pos + 4);
      pos = end == std::string_view::npos ? html.size() : end + 3;
      continue;
    }
    const size_t next = pos + 1;
    const bool closing = next < html.size() && html[next] == '/';
    const size_t name_start = closing ? next + 1 : next;
    const bool declaration = next < html.size() && (html[next] == '!' || html[next] == '?');
    if (!declaration &&
        !(name_start < html.size() && std::isalpha(static_cast<unsigned char>(html[name_start])))) {
      out += c;  // "a < b": not a tag
      ++pos;
      continue;
    }
    size_t name_end = name_start;
    while (name_end < html.size() && is_alnum(html[name_end])) ++name_end;
    std::string name(html.substr(name_start, name_end - name_start));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    const size_t end = tag_end(html, name_end);
    if (end == std::string_view::npos) break;  // an unclosed tag swallows the rest
    pos = end + 1;
    if (!closing && !declaration && (name == "script" || name == "style")) {
      const size_t close = find_ci(html, pos, name == "script" ? "</script" : "</style");
      if (close == std::string_view::npos) break;
      const size_t close_end = html.find('>', close);
      pos = close_end == std::string_view::npos ? html.size() : close_end + 1;
      continue;
    }
    if (is_block_tag(name)) {
      out += '\n';
    } else if (name == "td" || name == "th") {
      out += ' ';
    }
  }
  return collapse_whitespace(out);
}

}  // namespace berth::data
