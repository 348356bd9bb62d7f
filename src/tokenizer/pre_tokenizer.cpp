// The pre-tokenizers of tokenizer.json. Splitting follows HF's NormalizedString::split: each piece is cut
// into matches and the gaps between them, then kept, dropped or merged by the delimiter behaviour. Pieces
// stay spans of one text; only ByteLevel and Metaspace rewrite it.
#include "berth/tokenizer/pre_tokenizer.h"

#include <utf8proc.h>

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
using Span = PieceText::Span;

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Finds the matches inside text.chars[begin, end) as [begin, end) indices relative to `begin`, in order.
using FindMatches = std::function<void(const AlignedText& text, size_t begin, size_t end,
                                       std::vector<std::pair<size_t, size_t>>& matches)>;

// HF's SplitDelimiterBehavior over one piece [0, size) with its matches; appends the kept spans (shifted by
// `base`) to out. `invert` swaps the roles of matches and gaps.
void apply_behavior(const std::vector<std::pair<size_t, size_t>>& matches, size_t size, Behavior behavior,
                    bool invert, uint32_t base, std::vector<Span>& out) {
  thread_local std::vector<std::pair<Span, bool>> parts;
  parts.clear();
  uint32_t previous = 0;
  for (const auto& [b, e] : matches) {
    if (b != previous) parts.push_back({{previous, static_cast<uint32_t>(b)}, invert});
    parts.push_back({{static_cast<uint32_t>(b), static_cast<uint32_t>(e)}, !invert});
    previous = static_cast<uint32_t>(e);
  }
  if (previous != size || size == 0) parts.push_back({{previous, static_cast<uint32_t>(size)}, invert});
  const size_t first = out.size();
  const auto push = [&](Span s) { out.push_back({s.first + base, s.second + base}); };
  bool previous_match = false;
  switch (behavior) {
    case Behavior::Removed:
      for (const auto& [span, match] : parts)
        if (!match) push(span);
      break;
    case Behavior::Isolated:
      for (const auto& [span, match] : parts) push(span);
      break;
    case Behavior::MergedWithPrevious:
      for (const auto& [span, match] : parts) {
        if (match && !previous_match && out.size() > first)
          out.back().second = span.second + base;
        else
          push(span);
        previous_match = match;
      }
      break;
    case Behavior::MergedWithNext: {
      const size_t start = out.size();
      for (size_t i = parts.size(); i-- > 0;) {
        const auto& [span, match] = parts[i];
        if (match && !previous_match && out.size() > start)
          out.back().first = span.first + base;
        else
          push(span);
        previous_match = match;
      }
      std::reverse(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
      break;
    }
    case Behavior::Contiguous:
      for (const auto& [span, match] : parts) {
        if (match == previous_match && out.size() > first)
          out.back().second = span.second + base;
        else
          push(span);
        previous_match = match;
      }
      break;
  }
  // HF drops the empty pieces a behaviour leaves.
  size_t kept = first;
  for (size_t i = first; i < out.size(); ++i)
    if (out[i].second > out[i].first) out[kept++] = out[i];
  out.resize(kept);
}

void split_by(PieceText& text, Behavior behavior, bool invert, const FindMatches& find) {
  thread_local std::vector<std::pair<size_t, size_t>> matches;
  std::vector<Span> out;
  out.reserve(text.pieces.size() * 2);
  for (const Span& piece : text.pieces) {
    matches.clear();
    find(text.text, piece.first, piece.second, matches);
    apply_behavior(matches, piece.second - piece.first, behavior, invert, piece.first, out);
  }
  text.pieces = std::move(out);
}

// A new text made of each piece rewritten by `rewrite(piece, out_chars)`, the pieces following it.
template <typename Rewrite>
void rewrite_pieces(PieceText& text, Rewrite rewrite) {
  std::vector<Char> chars;
  chars.reserve(text.text.chars.size() + text.text.chars.size() / 4 + text.pieces.size());
  for (Span& piece : text.pieces) {
    const auto begin = static_cast<uint32_t>(chars.size());
    rewrite(piece, chars);
    piece = {begin, static_cast<uint32_t>(chars.size())};
  }
  text.text.chars = std::move(chars);
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
  void split(PieceText& text) const override {
    for (const auto& step : steps_) step->split(text);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(std::u32string pattern, std::shared_ptr<Regex> regex, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  void split(PieceText& text) const override {
    split_by(text, behavior_, invert_, [&](const AlignedText& t, size_t begin, size_t end, auto& matches) {
      if (regex_)
        regex_->find_all(t, begin, end, matches);
      else
        t.find(pattern_, begin, end, matches);
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
  void split(PieceText& text) const override {
    if (add_prefix_space_) prefix_spaces(text);
    if (regex_)
      split_by(text, Behavior::Isolated, false, [&](const AlignedText& t, size_t b, size_t e, auto& matches) {
        regex_->find_all(t, b, e, matches);
      });
    rewrite_pieces(text, [&](Span piece, std::vector<Char>& out) {
      for (uint32_t i = piece.first; i < piece.second; ++i) {
        const Char& ch = text.text.chars[i];
        if (ch.c < 0x80) {
          out.push_back({byte_char(static_cast<unsigned char>(ch.c)), ch.begin, ch.end});
          continue;
        }
        char encoded[4];
        const size_t n = utf8::encode(ch.c, encoded);
        for (size_t k = 0; k < n; ++k)
          out.push_back({byte_char(static_cast<unsigned char>(encoded[k])), ch.begin, ch.end});
      }
    });
  }

 private:
  // HF prepends a space to each piece that does not start with one; it shares the first code point's range.
  static void prefix_spaces(PieceText& text) {
    bool needed = false;
    for (const Span& piece : text.pieces) needed = needed || text.text.chars[piece.first].c != U' ';
    if (!needed) return;
    rewrite_pieces(text, [&](Span piece, std::vector<Char>& out) {
      const Char& first = text.text.chars[piece.first];
      if (first.c != U' ') out.push_back({U' ', first.begin, first.end});
      out.insert(out.end(), text.text.chars.begin() + piece.first, text.text.chars.begin() + piece.second);
    });
  }

  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

enum class PrependScheme { Always, First, Never };

// Spaces become the replacement character (▁), which is prepended per the scheme, then each ▁ starts a piece.
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {}
  void split(PieceText& text) const override {
    std::vector<Char>& chars = text.text.chars;
    bool prepend_any = false;
    for (const Span& piece : text.pieces) {
      for (uint32_t i = piece.first; i < piece.second; ++i)
        if (chars[i].c == U' ') chars[i].c = replacement_;
      prepend_any = prepend_any || prepends(chars[piece.first]);
    }
    if (prepend_any)
      rewrite_pieces(text, [&](Span piece, std::vector<Char>& out) {
        const Char& first = chars[piece.first];
        if (prepends(first)) out.push_back({replacement_, first.begin, first.end});
        out.insert(out.end(), chars.begin() + piece.first, chars.begin() + piece.second);
      });
    if (split_)
      split_by(text, Behavior::MergedWithNext, false,
               [&](const AlignedText& t, size_t begin, size_t end, auto& matches) {
                 for (size_t i = begin; i < end; ++i)
                   if (t.chars[i].c == replacement_) matches.emplace_back(i - begin, i + 1 - begin);
               });
  }

 private:
  // Whether a piece starting with `first` (already with ▁ for spaces) gets a ▁ in front.
  bool prepends(const Char& first) const {
    if (first.c == replacement_) return false;
    return scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && first.begin == 0);
  }

  char32_t replacement_;
  PrependScheme scheme_;
  bool split_;
};

// HF runs Whitespace's \w+|[^\w\s]+ with Rust's regex crate, whose \w also holds letter numbers (Nl) and the
// joiners U+200C/U+200D, which Oniguruma's does not.
const char* kRustWords = R"([\w\p{Nl}\x{200C}\x{200D}]+|[^\w\p{Nl}\x{200C}\x{200D}\s]+)";

// Splits at every code point `is_delimiter` accepts, each one a match (HF's split on a char predicate).
void split_at_chars(PieceText& text, bool (*is_delimiter)(char32_t), Behavior behavior) {
  split_by(text, behavior, false, [&](const AlignedText& t, size_t begin, size_t end, auto& matches) {
    for (size_t i = begin; i < end; ++i)
      if (is_delimiter(t.chars[i].c)) matches.emplace_back(i - begin, i + 1 - begin);
  });
}

bool is_space(char32_t c) { return (unicode::classes_of(c) & unicode::kWhitespace) != 0; }
bool is_punctuation(char32_t c) { return (unicode::classes_of(c) & unicode::kPunct) != 0; }
// Rust's char::is_numeric: the Nd, Nl and No categories.
bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= U'0' && c <= U'9';
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL ||
         category == UTF8PROC_CATEGORY_NO;
}

// Whitespace: words and runs of other non-space code points kept, the rest dropped. WhitespaceSplit: runs of
// non-whitespace.
class WhitespacePreTokenizer : public PreTokenizer {
 public:
  explicit WhitespacePreTokenizer(bool word_classes)
      : regex_(word_classes ? std::make_unique<Regex>(kRustWords, "Whitespace") : nullptr) {}
  void split(PieceText& text) const override {
    if (!regex_) return split_at_chars(text, is_space, Behavior::Removed);
    split_by(text, Behavior::Removed, true,
             [&](const AlignedText& t, size_t begin, size_t end, auto& matches) {
               regex_->find_all(t, begin, end, matches);
             });
  }

 private:
  std::unique_ptr<Regex> regex_;
};

// Punctuation and Digits: each matching code point a delimiter, with the step's behaviour.
class CharClassPreTokenizer : public PreTokenizer {
 public:
  CharClassPreTokenizer(bool (*is_delimiter)(char32_t), Behavior behavior)
      : is_delimiter_(is_delimiter), behavior_(behavior) {}
  void split(PieceText& text) const override { split_at_chars(text, is_delimiter_, behavior_); }

 private:
  bool (*is_delimiter_)(char32_t);
  Behavior behavior_;
};

// BERT's: whitespace removed, then each punctuation code point isolated.
class BertPreTokenizer : public PreTokenizer {
 public:
  void split(PieceText& text) const override {
    split_at_chars(text, is_space, Behavior::Removed);
    split_at_chars(text, is_punctuation, Behavior::Isolated);
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

PieceText PieceText::whole(AlignedText text) {
  PieceText out;
  if (!text.chars.empty()) out.pieces.push_back({0, static_cast<uint32_t>(text.chars.size())});
  out.text = std::move(text);
  return out;
}

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
