// BertNormalizer in one pass over the text. HF tokenizers applies clean_text, Chinese characters, NFD + mark
// removal and lowercase as four passes over the whole string; all are per character except NFD's canonical
// reordering, which is buffered here, so one pass gives the same characters and the same alignments.
#include "berth/tokenizer/bert_normalizer.h"

#include <algorithm>

#include "tokenizer/unicode_props.h"
#include "tokenizer/utf8.h"

namespace berth::tokenizer {
namespace {

// One character out of NFD. `added` marks the second and later characters of a decomposition: HF tokenizers
// aligns those with the character consumed before them, the others consume the next original character.
struct Decomposed {
  char32_t cp;
  bool added;
  int ccc;
};

// The state of one normalize() call once NFD is on.
class Pass {
 public:
  Pass(const BertNormalizerOptions& options, bool strip_accents, NormalizedText& out)
      : lowercase_(options.lowercase), strip_accents_(strip_accents), out_(out) {}

  bool idle() const { return run_.empty(); }

  // A character after clean_text and the Chinese-character spaces, from original character `origin`.
  void push(char32_t cp, uint32_t origin) {
    if (!strip_accents_) return emit(cp, origin);
    char32_t parts[4];
    int n = unicode::decompose(cp, parts);
    for (int i = 0; i < n; ++i) {
      int ccc = unicode::combining_class(parts[i]);
      if (ccc == 0) {
        flush();
        place({parts[i], i > 0, 0}, origin);
      } else {
        run_.push_back({parts[i], i > 0, ccc});
        if (i == 0) run_origins_.push_back(origin);
      }
    }
  }

  // Canonical ordering: a run of non-starters is stably sorted by combining class. The characters move but
  // the original characters are still consumed in order, exactly as HF tokenizers' transform() does.
  void flush() {
    if (run_.empty()) return;
    std::stable_sort(run_.begin(), run_.end(),
                     [](const Decomposed& a, const Decomposed& b) { return a.ccc < b.ccc; });
    size_t next = 0;
    for (const Decomposed& d : run_) place(d, d.added ? 0 : run_origins_[next++]);
    run_.clear();
    run_origins_.clear();
  }

 private:
  void place(const Decomposed& d, uint32_t origin) {
    if (d.added) {
      origin = last_origin_;
    } else {
      last_origin_ = origin;
    }
    if (unicode::classes_of(d.cp) & unicode::kMark) return;
    emit(d.cp, origin);
  }

  void emit(char32_t cp, uint32_t origin) {
    if (!lowercase_) {
      utf8::append(out_.text, cp);
      out_.origin.push_back(origin);
      return;
    }
    char32_t lowered[3];
    int n = unicode::lowercase(cp, lowered);
    for (int i = 0; i < n; ++i) {
      utf8::append(out_.text, lowered[i]);
      out_.origin.push_back(origin);
    }
  }

  bool lowercase_;
  bool strip_accents_;
  NormalizedText& out_;
  std::vector<Decomposed> run_;
  std::vector<uint32_t> run_origins_;  // the original characters of the run's non-added entries, in order
  uint32_t last_origin_ = 0;
};

}  // namespace

BertNormalizer::BertNormalizer(BertNormalizerOptions options)
    : options_(options), strip_accents_(options.strip_accents.value_or(options.lowercase)) {
  for (int c = 0; c < 128; ++c) {
    uint8_t classes = unicode::classes_of(static_cast<char32_t>(c));
    int out = c;
    if (options_.clean_text && (classes & unicode::kRemove)) {
      out = 0;
    } else if (options_.clean_text && (classes & unicode::kCleanSpace)) {
      out = ' ';
    } else if (options_.lowercase && c >= 'A' && c <= 'Z') {
      out = c - 'A' + 'a';
    }
    ascii_[c] = static_cast<uint8_t>(out);
  }
}

uint32_t BertNormalizer::normalize(std::string_view text, uint32_t first_char, NormalizedText& out) const {
  Pass pass(options_, strip_accents_, out);
  uint32_t index = first_char;
  size_t pos = 0;
  while (pos < text.size()) {
    // A run of ASCII: one table lookup per byte, written straight into the output (std::string::push_back
    // is not inlined). '\0' maps to 0 (deleted) under clean_text; without it, it is kept as is.
    if (static_cast<unsigned char>(text[pos]) < 0x80 && pass.idle()) {
      size_t run_end = pos;
      while (run_end < text.size() && static_cast<unsigned char>(text[run_end]) < 0x80) ++run_end;
      const size_t text_at = out.text.size(), origin_at = out.origin.size();
      out.text.resize(text_at + (run_end - pos));
      out.origin.resize(origin_at + (run_end - pos));
      char* to = out.text.data() + text_at;
      uint32_t* origin = out.origin.data() + origin_at;
      for (; pos < run_end; ++pos, ++index) {
        const auto byte = static_cast<unsigned char>(text[pos]);
        const uint8_t c = ascii_[byte];
        *to = static_cast<char>(c);
        *origin = index;
        const bool keep = c != 0 || (byte == 0 && !options_.clean_text);
        to += keep, origin += keep;
      }
      out.text.resize(static_cast<size_t>(to - out.text.data()));
      out.origin.resize(static_cast<size_t>(origin - out.origin.data()));
      continue;
    }
    char32_t cp = utf8::decode(text, pos);
    uint32_t origin = index++;
    uint8_t classes = unicode::classes_of(cp);
    if (options_.clean_text) {
      if (classes & unicode::kRemove) continue;
      if (classes & unicode::kCleanSpace) cp = ' ', classes = unicode::classes_of(' ');
    }
    if (options_.handle_chinese_chars && (classes & unicode::kChinese)) {
      pass.push(' ', origin);
      pass.push(cp, origin);
      pass.push(' ', origin);
    } else {
      pass.push(cp, origin);
    }
  }
  pass.flush();
  return index;
}

NormalizedText BertNormalizer::normalize(std::string_view text) const {
  NormalizedText out;
  normalize(text, 0, out);
  return out;
}

}  // namespace berth::tokenizer
