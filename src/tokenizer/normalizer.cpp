// The normalizers of tokenizer.json, each keeping every code point's original range as HF's NormalizedString
// aligns it: a replaced code point keeps the range of the one it replaces, an inserted one shares its
// neighbour's, a removed one takes its range with it.
#include "berth/tokenizer/normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <vector>

#include "json_fields.h"
#include "pipeline_json.h"
#include "regex.h"
#include "unicode_props.h"
#include "utf8.h"

namespace berth::tokenizer {
namespace {

using Char = AlignedText::Char;

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(AlignedText& text) const override {
    for (const auto& step : steps_) step->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

// Code points that can end a canonical composition although their combining class is 0: the last code point
// of every canonical decomposition (U+0BBE in U+0BCA, ...) and Hangul's medial vowels and final consonants.
bool composes_with_previous(char32_t c) {
  static const std::vector<bool> table = [] {
    std::vector<bool> t(0x110000, false);
    for (char32_t v = 0x1161; v <= 0x1175; ++v) t[v] = true;
    for (char32_t v = 0x11A8; v <= 0x11C2; ++v) t[v] = true;
    utf8proc_int32_t parts[8];
    for (utf8proc_int32_t cp = 0; cp < 0x110000; ++cp) {
      if (utf8proc_get_property(cp)->decomp_seqindex == UINT16_MAX) continue;
      const utf8proc_ssize_t n = utf8proc_decompose_char(cp, parts, 8, UTF8PROC_DECOMPOSE, nullptr);
      if (n >= 2 && n <= 8 && utf8proc_get_property(parts[n - 1])->combining_class == 0)
        t[static_cast<size_t>(parts[n - 1])] = true;
    }
    return t;
  }();
  return c < table.size() && table[c];
}

// Whether c belongs to the run before it: its decomposition (canonical, or compatibility for NFKC/NFKD)
// starts with a code point that reorders or composes with what precedes it.
bool joins_previous_run(char32_t c, bool compat) {
  if (c < 0x80) return false;
  utf8proc_int32_t parts[32];
  const int options = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), parts, 32,
                                                     static_cast<utf8proc_option_t>(options), nullptr);
  const char32_t first = n > 0 ? static_cast<char32_t>(parts[0]) : c;
  return unicode::combining_class(c) != 0 ||
         utf8proc_get_property(static_cast<utf8proc_int32_t>(first))->combining_class != 0 ||
         composes_with_previous(first);
}

// NFC, NFD, NFKC, NFKD by utf8proc, one run at a time (a starter and what may combine with it), so a run that
// changes maps onto the original run: its first output code point takes the first input's range, later
// ones the ranges of the inputs at the same distance from the run's end (compositions drop the code points
// right after the first; decompositions add code points that share the last one's range).
class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(int options) : options_(options) {}
  void normalize(AlignedText& text) const override {
    std::vector<Char> out;
    out.reserve(text.chars.size());
    size_t begin = 0;
    while (begin < text.chars.size()) {
      size_t end = begin + 1;
      while (end < text.chars.size() &&
             joins_previous_run(text.chars[end].c, (options_ & UTF8PROC_COMPAT) != 0))
        ++end;
      normalize_run(text.chars, begin, end, out);
      begin = end;
    }
    text.chars = std::move(out);
  }

 private:
  void normalize_run(const std::vector<Char>& in, size_t begin, size_t end, std::vector<Char>& out) const {
    std::string run;
    for (size_t i = begin; i < end; ++i) utf8::append(run, in[i].c);
    utf8proc_uint8_t* mapped = nullptr;
    const utf8proc_ssize_t bytes = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                                                static_cast<utf8proc_ssize_t>(run.size()), &mapped,
                                                static_cast<utf8proc_option_t>(options_));
    BERTH_BUG(bytes >= 0, "utf8proc could not normalize a run: ", utf8proc_errmsg(bytes));
    std::u32string result;
    for (size_t pos = 0; pos < static_cast<size_t>(bytes);)
      result.push_back(utf8::decode_valid(reinterpret_cast<const char*>(mapped), pos));
    std::free(mapped);
    const auto n = static_cast<utf8proc_ssize_t>(result.size());
    const size_t count = static_cast<size_t>(n), length = end - begin;
    for (size_t k = 0; k < count; ++k) {
      size_t source = begin;
      if (count == length) {
        source = begin + k;
      } else if (k > 0) {
        source = count < length ? end - (count - k) : begin + std::min(k, length - 1);
      }
      out.push_back({static_cast<char32_t>(result[k]), in[source].begin, in[source].end});
    }
  }

  int options_;
};

int utf8proc_options(const std::string& form) {
  const int stable = UTF8PROC_STABLE;
  if (form == "NFC") return stable | UTF8PROC_COMPOSE;
  if (form == "NFD") return stable | UTF8PROC_DECOMPOSE;
  if (form == "NFKC") return stable | UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
  return stable | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;  // NFKD
}

// Rust's char::to_lowercase per code point; the extra code points of a longer lowercase share its range.
class LowercaseNormalizer : public Normalizer {
 public:
  void normalize(AlignedText& text) const override {
    std::vector<Char> out;
    out.reserve(text.chars.size());
    for (const Char& ch : text.chars) {
      char32_t lower[3];
      const int n = unicode::lowercase(ch.c, lower);
      for (int i = 0; i < n; ++i) out.push_back({lower[i], ch.begin, ch.end});
    }
    text.chars = std::move(out);
  }
};

#include "combining_marks.inc"

// unicode-normalization-alignments' is_combining_mark (its Unicode data, older than utf8proc's).
bool is_combining_mark(char32_t c) {
  const auto* end = std::end(kCombiningMarks);
  const auto* it = std::upper_bound(std::begin(kCombiningMarks), end, c,
                                    [](char32_t value, const auto& range) { return value < range.first; });
  return it != std::begin(kCombiningMarks) && c <= (it - 1)->second;
}

// Drops combining marks of every Mark category (HF's StripAccents, meant after NFD; BertNormalizer drops
// only nonspacing ones).
class StripAccentsNormalizer : public Normalizer {
 public:
  void normalize(AlignedText& text) const override {
    std::vector<Char> out;
    out.reserve(text.chars.size());
    for (const Char& ch : text.chars)
      if (!is_combining_mark(ch.c)) out.push_back(ch);
    text.chars = std::move(out);
  }
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(AlignedText& text) const override {
    const auto space = [](char32_t c) { return (unicode::classes_of(c) & unicode::kWhitespace) != 0; };
    size_t begin = 0, end = text.chars.size();
    if (left_)
      while (begin < end && space(text.chars[begin].c)) ++begin;
    if (right_)
      while (end > begin && space(text.chars[end - 1].c)) --end;
    text = text.slice(begin, end);
  }

 private:
  bool left_, right_;
};

// Prepends `prefix` to non-empty text; its code points share the first code point's range.
class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::u32string prefix) : prefix_(std::move(prefix)) {}
  void normalize(AlignedText& text) const override {
    if (text.chars.empty()) return;
    const Char first = text.chars.front();
    std::vector<Char> out;
    out.reserve(text.chars.size() + prefix_.size());
    for (char32_t c : prefix_) out.push_back({c, first.begin, first.end});
    out.insert(out.end(), text.chars.begin(), text.chars.end());
    text.chars = std::move(out);
  }

 private:
  std::u32string prefix_;
};

// Replaces every match of a string or a regex with `content`. HF inserts the replacement after the match
// and removes the match, so every code point of the replacement takes the last matched one's range.
class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(std::u32string pattern, std::unique_ptr<Regex> regex, std::u32string content)
      : pattern_(std::move(pattern)), regex_(std::move(regex)), content_(std::move(content)) {}
  void normalize(AlignedText& text) const override {
    std::vector<Char> out;
    out.reserve(text.chars.size());
    size_t last = 0;
    for (const auto& [begin, end] : matches(text)) {
      out.insert(out.end(), text.chars.begin() + static_cast<std::ptrdiff_t>(last),
                 text.chars.begin() + static_cast<std::ptrdiff_t>(begin));
      for (const char32_t c : content_)
        out.push_back({c, text.chars[end - 1].begin, text.chars[end - 1].end});
      last = end;
    }
    out.insert(out.end(), text.chars.begin() + static_cast<std::ptrdiff_t>(last), text.chars.end());
    text.chars = std::move(out);
  }

 private:
  // Non-empty matches as [begin, end) code point indices.
  std::vector<std::pair<size_t, size_t>> matches(const AlignedText& text) const {
    if (!regex_) return text.find(pattern_);
    std::vector<std::pair<size_t, size_t>> out;
    for (const auto& span : regex_->find_all(text))
      if (span.second > span.first) out.push_back(span);
    return out;
  }

  std::u32string pattern_;
  std::unique_ptr<Regex> regex_;
  std::u32string content_;
};

std::unique_ptr<Normalizer> parse_replace(const JsonFields& fields) {
  const JsonFields pattern(fields.raw("pattern"), fields.at("pattern"));
  const std::u32string content = utf8::to_u32(fields.required<std::string>("content"));
  if (pattern.has("Regex"))
    return std::make_unique<ReplaceNormalizer>(
        U"", std::make_unique<Regex>(pattern.required<std::string>("Regex"), pattern.at("Regex")), content);
  return std::make_unique<ReplaceNormalizer>(utf8::to_u32(pattern.required<std::string>("String")), nullptr,
                                             content);
}

}  // namespace

std::unique_ptr<Normalizer> parse_normalizer(const nlohmann::json& json, const std::string& path) {
  if (json.is_null()) return nullptr;
  const JsonFields fields(json, path);
  const std::string type =
      fields.type("normalizer", {"Sequence", "NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents",
                                 "Strip", "Prepend", "Replace", "Precompiled", "BertNormalizer"});
  if (type == "Precompiled") return parse_precompiled(fields);
  if (type == "BertNormalizer") return parse_bert_normalizer(fields);
  if (type == "Sequence")
    return std::make_unique<SequenceNormalizer>(
        parse_steps<Normalizer>(fields, "normalizers", parse_normalizer));
  if (type.rfind("NF", 0) == 0) return std::make_unique<UnicodeNormalizer>(utf8proc_options(type));
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Strip")
    return std::make_unique<StripNormalizer>(fields.get<bool>("strip_left", true),
                                             fields.get<bool>("strip_right", true));
  if (type == "Prepend")
    return std::make_unique<PrependNormalizer>(utf8::to_u32(fields.required<std::string>("prepend")));
  return parse_replace(fields);
}

}  // namespace berth::tokenizer
