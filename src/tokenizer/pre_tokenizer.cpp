// The pre-tokenizers of tokenizer.json. Splitting follows HF's NormalizedString::split: the text is cut into
// matches and the gaps between them, then kept, dropped or merged by the delimiter behaviour.
#include "berth/tokenizer/pre_tokenizer.h"

#include <utf8proc.h>

#include <array>
#include <functional>
#include <optional>

#include "json_fields.h"
#include "pipeline_json.h"
#include "regex.h"
#include "unicode_props.h"
#include "utf8.h"

namespace berth::tokenizer {
namespace {

using Char = AlignedText::Char;
using Span = std::pair<size_t, size_t>;  // [begin, end) in code points of a piece

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Matches and gaps covering [0, size), each marked whether it is a match.
std::vector<std::pair<Span, bool>> with_gaps(const std::vector<Span>& matches, size_t size) {
  std::vector<std::pair<Span, bool>> out;
  if (size == 0) return {{{0, 0}, false}};
  size_t previous = 0;
  for (const Span& m : matches) {
    if (m.first != previous) out.push_back({{previous, m.first}, false});
    out.push_back({m, true});
    previous = m.second;
  }
  if (previous != size) out.push_back({{previous, size}, false});
  return out;
}

// HF's SplitDelimiterBehavior over the matches: which spans become pieces.
std::vector<Span> apply_behavior(const std::vector<std::pair<Span, bool>>& parts, Behavior behavior) {
  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
    case Behavior::Removed:
      for (const auto& [span, match] : parts)
        if (!match) out.push_back(span);
      return out;
    case Behavior::Isolated:
      for (const auto& [span, match] : parts) out.push_back(span);
      return out;
    case Behavior::MergedWithPrevious:
      for (const auto& [span, match] : parts) {
        if (match && !previous_match && !out.empty())
          out.back().second = span.second;
        else
          out.push_back(span);
        previous_match = match;
      }
      return out;
    case Behavior::MergedWithNext:
      for (size_t i = parts.size(); i-- > 0;) {
        const auto& [span, match] = parts[i];
        if (match && !previous_match && !out.empty())
          out.back().first = span.first;
        else
          out.push_back(span);
        previous_match = match;
      }
      return {out.rbegin(), out.rend()};
    case Behavior::Contiguous:
      for (const auto& [span, match] : parts) {
        if (match == previous_match && !out.empty())
          out.back().second = span.second;
        else
          out.push_back(span);
        previous_match = match;
      }
      return out;
  }
  return out;
}

void split_by(std::vector<AlignedText>& pieces, Behavior behavior, bool invert,
              const std::function<std::vector<Span>(const AlignedText&)>& find) {
  std::vector<AlignedText> out;
  for (const AlignedText& piece : pieces) {
    auto parts = with_gaps(find(piece), piece.chars.size());
    if (invert)
      for (auto& part : parts) part.second = !part.second;
    for (const Span& span : apply_behavior(parts, behavior))
      if (span.second > span.first) out.push_back(piece.slice(span.first, span.second));
  }
  pieces = std::move(out);
}

Behavior parse_behavior(const JsonFields& fields) {
  const std::string name = fields.required<std::string>("behavior");
  if (name == "Removed") return Behavior::Removed;
  if (name == "Isolated") return Behavior::Isolated;
  if (name == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::MergedWithNext;
  BERTH_CHECK(name == "Contiguous", fields.at("behavior"), ": \"", name,
              "\" is not a split behaviour; HF's are Removed, Isolated, MergedWithPrevious, MergedWithNext, "
              "Contiguous");
  return Behavior::Contiguous;
}

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void split(std::vector<AlignedText>& pieces) const override {
    for (const auto& step : steps_) step->split(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(std::u32string pattern, std::shared_ptr<Regex> regex, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  void split(std::vector<AlignedText>& pieces) const override {
    split_by(pieces, behavior_, invert_, [&](const AlignedText& piece) {
      return regex_ ? regex_->find_all(piece) : piece.find(pattern_);
    });
  }

 private:
  std::u32string pattern_;
  std::shared_ptr<Regex> regex_;
  Behavior behavior_;
  bool invert_;
};

// Each code point's UTF-8 bytes as GPT-2's byte characters; all of them keep the code point's range.
class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space),
        regex_(use_regex ? std::make_unique<Regex>(kGpt2Pattern, "ByteLevel") : nullptr) {}
  void split(std::vector<AlignedText>& pieces) const override {
    if (add_prefix_space_)
      for (AlignedText& piece : pieces)
        if (!piece.chars.empty() && piece.chars.front().c != U' ')
          piece.chars.insert(piece.chars.begin(), {U' ', piece.chars.front().begin, piece.chars.front().end});
    if (regex_)
      split_by(pieces, Behavior::Isolated, false, [&](const AlignedText& p) { return regex_->find_all(p); });
    for (AlignedText& piece : pieces) {
      std::vector<Char> bytes;
      bytes.reserve(piece.chars.size() * 2);
      for (const Char& ch : piece.chars) {
        std::string encoded;
        utf8::append(encoded, ch.c);
        for (char b : encoded) bytes.push_back({byte_char(static_cast<unsigned char>(b)), ch.begin, ch.end});
      }
      piece.chars = std::move(bytes);
    }
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

enum class PrependScheme { Always, First, Never };

// Spaces become the replacement character (▁), which is prepended per the scheme, then each ▁ starts a piece.
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {}
  void split(std::vector<AlignedText>& pieces) const override {
    for (AlignedText& piece : pieces) {
      for (Char& ch : piece.chars)
        if (ch.c == U' ') ch.c = replacement_;
      const bool starts = !piece.chars.empty() && piece.chars.front().c == replacement_;
      const bool prepend = !piece.chars.empty() && !starts &&
                           (scheme_ == PrependScheme::Always ||
                            (scheme_ == PrependScheme::First && piece.chars.front().begin == 0));
      if (prepend)
        piece.chars.insert(piece.chars.begin(),
                           {replacement_, piece.chars.front().begin, piece.chars.front().end});
    }
    if (split_)
      split_by(pieces, Behavior::MergedWithNext, false,
               [&](const AlignedText& p) { return p.find(std::u32string(1, replacement_)); });
  }

 private:
  char32_t replacement_;
  PrependScheme scheme_;
  bool split_;
};

// HF runs Whitespace's \w+|[^\w\s]+ with Rust's regex crate, whose \w also holds letter numbers (Nl) and the
// joiners U+200C/U+200D, which Oniguruma's does not.
const char* kRustWords = R"([\w\p{Nl}\x{200C}\x{200D}]+|[^\w\p{Nl}\x{200C}\x{200D}\s]+)";

// Whitespace: words and runs of other non-space code points kept, the rest dropped. WhitespaceSplit: runs of
// non-whitespace.
class WhitespacePreTokenizer : public PreTokenizer {
 public:
  explicit WhitespacePreTokenizer(bool word_classes)
      : regex_(word_classes ? std::make_unique<Regex>(kRustWords, "Whitespace") : nullptr) {}
  void split(std::vector<AlignedText>& pieces) const override {
    if (regex_) {
      split_by(pieces, Behavior::Removed, true, [&](const AlignedText& p) { return regex_->find_all(p); });
      return;
    }
    split_by(pieces, Behavior::Removed, false, [](const AlignedText& p) {
      std::vector<Span> out;
      for (size_t i = 0; i < p.chars.size(); ++i)
        if (unicode::classes_of(p.chars[i].c) & unicode::kWhitespace) out.emplace_back(i, i + 1);
      return out;
    });
  }

 private:
  std::unique_ptr<Regex> regex_;
};

// Splits at every code point `is_delimiter` accepts, each one a match (HF's split on a char predicate).
class CharClassPreTokenizer : public PreTokenizer {
 public:
  CharClassPreTokenizer(std::function<bool(char32_t)> is_delimiter, Behavior behavior)
      : is_delimiter_(std::move(is_delimiter)), behavior_(behavior) {}
  void split(std::vector<AlignedText>& pieces) const override {
    split_by(pieces, behavior_, false, [&](const AlignedText& p) {
      std::vector<Span> out;
      for (size_t i = 0; i < p.chars.size(); ++i)
        if (is_delimiter_(p.chars[i].c)) out.emplace_back(i, i + 1);
      return out;
    });
  }

 private:
  std::function<bool(char32_t)> is_delimiter_;
  Behavior behavior_;
};

bool is_space(char32_t c) { return (unicode::classes_of(c) & unicode::kWhitespace) != 0; }
bool is_punctuation(char32_t c) { return (unicode::classes_of(c) & unicode::kPunct) != 0; }
// Rust's char::is_numeric: the Nd, Nl and No categories.
bool is_numeric(char32_t c) {
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL ||
         category == UTF8PROC_CATEGORY_NO;
}

// BERT's: whitespace removed, then each punctuation code point isolated.
class BertPreTokenizer : public PreTokenizer {
 public:
  void split(std::vector<AlignedText>& pieces) const override {
    CharClassPreTokenizer(is_space, Behavior::Removed).split(pieces);
    CharClassPreTokenizer(is_punctuation, Behavior::Isolated).split(pieces);
  }
};

std::unique_ptr<PreTokenizer> parse_metaspace(const JsonFields& fields) {
  const std::u32string replacement = utf8::to_u32(fields.get<std::string>("replacement", "\u2581"));
  BERTH_CHECK(replacement.size() == 1, fields.at("replacement"), ": expected one character, found ",
              replacement.size());
  std::string scheme = fields.get<std::string>("prepend_scheme", "");
  if (scheme.empty()) scheme = fields.get<bool>("add_prefix_space", true) ? "always" : "never";
  BERTH_CHECK(scheme == "always" || scheme == "first" || scheme == "never", fields.at("prepend_scheme"),
              ": \"", scheme, "\" is not a prepend scheme; HF's are always, first, never");
  const PrependScheme parsed = scheme == "always"  ? PrependScheme::Always
                               : scheme == "first" ? PrependScheme::First
                                                   : PrependScheme::Never;
  return std::make_unique<MetaspacePreTokenizer>(replacement[0], parsed, fields.get<bool>("split", true));
}

std::unique_ptr<PreTokenizer> parse_split(const JsonFields& fields) {
  const JsonFields pattern(fields.raw("pattern"), fields.at("pattern"));
  std::shared_ptr<Regex> regex;
  std::u32string text;
  if (pattern.has("Regex")) {
    regex = std::make_shared<Regex>(pattern.required<std::string>("Regex"), pattern.at("Regex"));
  } else {
    text = utf8::to_u32(pattern.required<std::string>("String"));
  }
  return std::make_unique<SplitPreTokenizer>(std::move(text), std::move(regex), parse_behavior(fields),
                                             fields.get<bool>("invert", false));
}

}  // namespace

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const nlohmann::json& json, const std::string& path) {
  if (json.is_null()) return nullptr;
  const JsonFields fields(json, path);
  const std::string type =
      fields.type("pre-tokenizer", {"Sequence", "Split", "ByteLevel", "Metaspace", "Whitespace",
                                    "WhitespaceSplit", "BertPreTokenizer", "Punctuation", "Digits"});
  if (type == "Sequence")
    return std::make_unique<SequencePreTokenizer>(
        parse_steps<PreTokenizer>(fields, "pretokenizers", parse_pre_tokenizer));
  if (type == "Split") return parse_split(fields);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelPreTokenizer>(fields.get<bool>("add_prefix_space", true),
                                                   fields.get<bool>("use_regex", true));
  if (type == "Metaspace") return parse_metaspace(fields);
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Punctuation")
    return std::make_unique<CharClassPreTokenizer>(
        is_punctuation, fields.has("behavior") ? parse_behavior(fields) : Behavior::Isolated);
  if (type == "Digits")
    return std::make_unique<CharClassPreTokenizer>(
        is_numeric, fields.get<bool>("individual_digits", false) ? Behavior::Isolated : Behavior::Contiguous);
  return std::make_unique<WhitespacePreTokenizer>(type == "Whitespace");
}

}  // namespace berth::tokenizer
