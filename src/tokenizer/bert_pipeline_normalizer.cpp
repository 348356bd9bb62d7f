// BertNormalizer as a step of tokenizer.json's normalizer: the WordPiece fast path's BertNormalizer (exact to
// HF's, alignments included) run on the text so far, each output code point taking the range of the input
// code point it came from.
#include <string>
#include <vector>

#include "berth/tokenizer/bert_normalizer.h"
#include "berth/tokenizer/normalizer.h"
#include "json_fields.h"
#include "pipeline_json.h"
#include "utf8.h"

namespace berth::tokenizer {
namespace {

class BertPipelineNormalizer : public Normalizer {
 public:
  explicit BertPipelineNormalizer(BertNormalizerOptions options) : normalizer_(options) {}

  void normalize(AlignedText& text) const override {
    thread_local std::string input;
    thread_local NormalizedText normalized;
    thread_local std::vector<AlignedText::Char> out;
    input.clear();
    for (const AlignedText::Char& ch : text.chars) utf8::append(input, ch.c);
    normalized.clear();
    normalizer_.normalize(input, 0, normalized);
    out.clear();
    out.reserve(normalized.origin.size());
    size_t pos = 0;
    for (const uint32_t origin : normalized.origin) {
      const AlignedText::Char& source = text.chars[origin];
      out.push_back({utf8::decode_valid(normalized.text.data(), pos), source.begin, source.end});
    }
    std::swap(text.chars, out);
  }

 private:
  BertNormalizer normalizer_;
};

}  // namespace

std::unique_ptr<Normalizer> parse_bert_normalizer(const JsonFields& fields) {
  BertNormalizerOptions options;
  options.clean_text = fields.required<bool>("clean_text");
  options.handle_chinese_chars = fields.required<bool>("handle_chinese_chars");
  if (fields.has("strip_accents")) options.strip_accents = fields.required<bool>("strip_accents");
  options.lowercase = fields.required<bool>("lowercase");
  return std::make_unique<BertPipelineNormalizer>(options);
}

}  // namespace berth::tokenizer
