// The Precompiled normalizer (SentencePiece's charsmap) as HF tokenizers' normalizers/precompiled.rs applies
// it: per extended grapheme cluster, a cluster under 6 bytes replaced whole by its shortest mapped prefix's
// replacement, any other cluster code point by code point; alignments by precompiled.rs's replace()
// bookkeeping and NormalizedString::transform.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "base64.h"
#include "berth/tokenizer/normalizer.h"
#include "grapheme_clusters.h"
#include "json_fields.h"
#include "pipeline_json.h"
#include "precompiled_charsmap.h"
#include "utf8.h"

namespace berth::tokenizer {
namespace {

using Char = AlignedText::Char;

// One code point of the result and what it does to the input, as HF's transform() reads it: 0 replaces the
// next input code point, n > 0 is inserted, n < 0 replaces the next one and removes -n more.
struct Change {
  char32_t c;
  int32_t n;
};

// HF's replace(): the code points of `replacement` stand for `old_count` input code points. Extra ones are
// insertions (the last ones); missing ones are removals charged to the last change so far, even one of an
// earlier cluster when the replacement is empty.
void replace(std::vector<Change>& changes, size_t old_count, std::string_view replacement) {
  const size_t first = changes.size();
  for (size_t pos = 0; pos < replacement.size();)
    changes.push_back({utf8::decode_valid(replacement.data(), pos), 0});
  const auto diff = static_cast<int64_t>(changes.size() - first) - static_cast<int64_t>(old_count);
  if (diff > 0) {
    for (size_t i = changes.size(), taken = 0; i > 0 && taken < static_cast<size_t>(diff); --i, ++taken)
      changes[i - 1].n = 1;
  } else if (diff < 0 && !changes.empty()) {
    changes.back().n += static_cast<int32_t>(diff);
  }
}

// HF's NormalizedString::transform over the whole text: a replacing code point takes the range of the input
// code point it consumes, an inserted one the range of the input code point before it.
void apply_changes(const std::vector<Change>& changes, AlignedText& text) {
  thread_local std::vector<Char> out;
  out.clear();
  out.reserve(changes.size());
  const std::vector<Char>& in = text.chars;
  size_t next = 0;  // the next input code point to consume
  for (const Change& change : changes) {
    if (change.n > 0) {
      // Before any input HF gives it the empty range at the text's start.
      out.push_back(next > 0 ? Char{change.c, in[next - 1].begin, in[next - 1].end}
                             : Char{change.c, in[0].begin, in[0].begin});
      continue;
    }
    BERTH_BUG(next < in.size(), "Precompiled consumes more code points than the text has");
    out.push_back({change.c, in[next].begin, in[next].end});
    next = std::min(in.size(), next + 1 + static_cast<size_t>(change.n < 0 ? -change.n : 0));
  }
  std::swap(text.chars, out);
}

bool is_ascii(char32_t c) { return c < 0x80; }

class PrecompiledNormalizer : public Normalizer {
 public:
  explicit PrecompiledNormalizer(PrecompiledCharsmap charsmap) : charsmap_(std::move(charsmap)) {
    for (int c = 0; c < 0x80; ++c) ascii_[c] = charsmap_.transform(std::string(1, static_cast<char>(c)));
  }

  void normalize(AlignedText& text) const override {
    if (charsmap_.empty() || text.chars.empty()) return;
    thread_local std::vector<Change> changes;
    changes.clear();
    bool modified = false;
    const std::vector<Char>& chars = text.chars;
    GraphemeClusters clusters;
    for (size_t begin = 0; begin < chars.size();) {
      const size_t end = clusters.cluster_end(chars.data(), chars.size(), begin);
      if (end == begin + 1 && is_ascii(chars[begin].c)) {
        const auto& mapped = ascii_[chars[begin].c];
        if (mapped) {
          replace(changes, 1, *mapped), modified = true;
        } else {
          changes.push_back({chars[begin].c, 0});
        }
      } else {
        modified = normalize_cluster(chars, begin, end, changes) || modified;
      }
      begin = end;
    }
    if (modified) apply_changes(changes, text);
  }

 private:
  // Appends the changes of the cluster chars[begin, end); true when it maps anything.
  bool normalize_cluster(const std::vector<Char>& chars, size_t begin, size_t end,
                         std::vector<Change>& changes) const {
    thread_local std::string key;
    key.clear();
    for (size_t i = begin; i < end && key.size() < 6; ++i) utf8::append(key, chars[i].c);
    if (key.size() < 6) {
      if (const auto mapped = charsmap_.transform(key)) {
        replace(changes, end - begin, *mapped);
        return true;
      }
    }
    bool modified = false;
    for (size_t i = begin; i < end; ++i) {
      key.clear();
      utf8::append(key, chars[i].c);
      if (const auto mapped = charsmap_.transform(key)) {
        replace(changes, 1, *mapped);
        modified = true;
      } else {
        changes.push_back({chars[i].c, 0});
      }
    }
    return modified;
  }

  PrecompiledCharsmap charsmap_;
  std::optional<std::string_view> ascii_[0x80];  // each ASCII code point's replacement, when mapped
};

}  // namespace

std::unique_ptr<Normalizer> parse_precompiled(const JsonFields& fields) {
  const std::string where = fields.at("precompiled_charsmap");
  const std::string blob = decode_base64_strict(fields.required<std::string>("precompiled_charsmap"), where);
  return std::make_unique<PrecompiledNormalizer>(PrecompiledCharsmap(blob, where));
}

}  // namespace berth::tokenizer
