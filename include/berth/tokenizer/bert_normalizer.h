// BERT's text normalizer, exact to HF tokenizers' BertNormalizer: clean_text, Chinese characters, accents,
// lowercase, with every normalized character traced back to the original character it came from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth::tokenizer {

struct BertNormalizerOptions {
  bool clean_text = true;             // drop \0, U+FFFD and control/format chars; any whitespace -> ' '
  bool handle_chinese_chars = true;   // put spaces around CJK ideographs so each becomes a word
  std::optional<bool> strip_accents;  // NFD, then drop nonspacing marks; unset: follows lowercase
  bool lowercase = true;
};

// Normalized text: UTF-8, plus for each of its characters the index (in code points) of the original
// character it came from. A character of the original may yield several (a CJK ideograph and its spaces, a
// decomposed accent) or none (a deleted control character).
struct NormalizedText {
  std::string text;
  std::vector<uint32_t> origin;  // one entry per code point of `text`

  void clear() {
    text.clear();
    origin.clear();
  }
};

class BertNormalizer {
 public:
  explicit BertNormalizer(BertNormalizerOptions options = {});

  const BertNormalizerOptions& options() const { return options_; }
  bool strips_accents() const { return strip_accents_; }

  // Appends the normalization of `text` to out; its first character is character `first_char` of the
  // original. Returns the index of the character after text's last. Throws berth::Error when text is not
  // valid UTF-8.
  uint32_t normalize(std::string_view text, uint32_t first_char, NormalizedText& out) const;
  NormalizedText normalize(std::string_view text) const;

 private:
  BertNormalizerOptions options_;
  bool strip_accents_;
  uint8_t ascii_[128];  // normalized ASCII byte, or 0 to delete it
};

}  // namespace berth::tokenizer
