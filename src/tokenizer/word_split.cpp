// The three pre-tokenization patterns as scans. Each step below is one alternative of the pattern, tried in
// the pattern's order at the scan position, as Oniguruma's backtracking tries them; the character classes are
// Oniguruma's own, so both agree on every code point (tests/tokenizer/word_split_test.cpp checks them).
#include "word_split.h"

#include <oniguruma.h>

#include <array>
#include <vector>

namespace berth::tokenizer {
namespace {

enum : uint8_t { kLetter = 1, kNumber = 2, kSpace = 4 };

uint8_t ask_oniguruma(char32_t c) {
  static const auto [letter, number] = [] {
    OnigEncoding utf8 = ONIG_ENCODING_UTF8;
    const auto ctype = [&](const char* name) {
      const auto* p = reinterpret_cast<const OnigUChar*>(name);
      return ONIGENC_PROPERTY_NAME_TO_CTYPE(utf8, const_cast<OnigUChar*>(p),
                                            const_cast<OnigUChar*>(p) + std::char_traits<char>::length(name));
    };
    return std::array<int, 2>{ctype("L"), ctype("N")};
  }();
  OnigEncoding utf8 = ONIG_ENCODING_UTF8;
  const auto code = static_cast<OnigCodePoint>(c);
  return static_cast<uint8_t>(
      (ONIGENC_IS_CODE_CTYPE(utf8, code, static_cast<unsigned>(letter)) ? kLetter : 0) |
      (ONIGENC_IS_CODE_CTYPE(utf8, code, static_cast<unsigned>(number)) ? kNumber : 0) |
      (ONIGENC_IS_CODE_CTYPE(utf8, code, ONIGENC_CTYPE_SPACE) ? kSpace : 0));
}

// \p{L}, \p{N} and \s of c: a table for the Basic Multilingual Plane, Oniguruma asked for the rest.
uint8_t classes(char32_t c) {
  static const std::vector<uint8_t> bmp = [] {
    std::vector<uint8_t> t(0x10000);
    for (char32_t c = 0; c < t.size(); ++c) t[c] = ask_oniguruma(c);
    return t;
  }();
  return c < bmp.size() ? bmp[c] : ask_oniguruma(c);
}

bool letter(char32_t c) { return classes(c) & kLetter; }
bool number(char32_t c) { return classes(c) & kNumber; }
bool space(char32_t c) { return classes(c) & kSpace; }
bool other(char32_t c) { return !(classes(c) & (kLetter | kNumber | kSpace)); }  // [^\s\p{L}\p{N}]
bool newline(char32_t c) { return c == U'\r' || c == U'\n'; }

// The scan position and the piece, in code points.
struct Scan {
  const AlignedText::Char* chars;
  size_t size;

  char32_t at(size_t i) const { return i < size ? chars[i].c : 0; }
  bool is(size_t i, bool (*test)(char32_t)) const { return i < size && test(chars[i].c); }
  size_t run(size_t i, bool (*test)(char32_t)) const {
    while (is(i, test)) ++i;
    return i;
  }
};

// 's|'t|'re|'ve|'m|'ll|'d at i: the match's end, or 0. Case-insensitive (Llama 3): (?i:...) with Unicode's
// case folding, under which ſ (U+017F) is an s.
size_t contraction(const Scan& s, size_t i, bool any_case) {
  if (s.at(i) != U'\'') return 0;
  const auto letter_is = [&](size_t k, char32_t lower) {
    const char32_t c = s.at(k);
    if (c == lower) return true;
    if (!any_case) return false;
    return c == lower - 32 || (lower == U's' && c == U'\u017F');
  };
  for (char32_t one : std::u32string_view(U"stmd"))
    if (letter_is(i + 1, one)) return i + 2;
  for (const char32_t* two : {U"re", U"ve", U"ll"})
    if (letter_is(i + 1, two[0]) && letter_is(i + 2, two[1])) return i + 3;
  return 0;
}

// \s+(?!\S)|\s+ at i (a space there): the whole run, less its last space when text follows it.
size_t spaces(const Scan& s, size_t i) {
  const size_t end = s.run(i, space);
  return end < s.size && end - i >= 2 ? end - 1 : end;
}

size_t gpt2_match(const Scan& s, size_t i) {
  if (const size_t end = contraction(s, i, false)) return end;
  const size_t from = s.at(i) == U' ' && i + 1 < s.size ? i + 1 : i;  // the optional space of " ?"
  for (auto* test : {letter, number, other}) {
    if (s.is(from, test)) return s.run(from, test);
    if (from != i && s.is(i, test)) return s.run(i, test);
  }
  return spaces(s, i);
}

// Llama 3 and Qwen2: digits_at_most 3 or 1.
size_t llama3_match(const Scan& s, size_t i, size_t digits_at_most) {
  if (const size_t end = contraction(s, i, true)) return end;
  const char32_t c = s.at(i);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!newline(c) && !letter(c) && !number(c) && s.is(i + 1, letter)) return s.run(i + 1, letter);
  if (letter(c)) return s.run(i, letter);
  // \p{N}{1,3}
  if (number(c)) {
    size_t end = i;
    while (end - i < digits_at_most && s.is(end, number)) ++end;
    return end;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  const size_t from = c == U' ' && s.is(i + 1, other) ? i + 1 : i;
  if (s.is(from, other)) return s.run(s.run(from, other), newline);
  // \s*[\r\n]+: the space run up to its last line break
  const size_t end = s.run(i, space);
  for (size_t k = end; k-- > i;)
    if (newline(s.at(k))) return k + 1;
  return spaces(s, i);  // \s+(?!\S)|\s+
}

}  // namespace

std::optional<WordSplit> word_split_for(std::string_view pattern) {
  if (pattern == R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)")
    return WordSplit::Gpt2;
  constexpr std::string_view kLlama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (pattern == kLlama3) return WordSplit::Llama3;
  constexpr std::string_view kQwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (pattern == kQwen2) return WordSplit::Qwen2;
  return std::nullopt;
}

void split_words(WordSplit split, const AlignedText& text, size_t from, size_t to,
                 std::vector<std::pair<size_t, size_t>>& out) {
  const Scan s{text.chars.data() + from, to - from};
  for (size_t i = 0; i < s.size;) {
    const size_t end = split == WordSplit::Gpt2     ? gpt2_match(s, i)
                       : split == WordSplit::Llama3 ? llama3_match(s, i, 3)
                                                    : llama3_match(s, i, 1);
    out.emplace_back(i, end);
    i = end;
  }
}

}  // namespace berth::tokenizer
