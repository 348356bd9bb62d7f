// Regex over Oniguruma: one compiled pattern, one region per search (thread safe: the pattern is read-only).
#include "regex.h"

#include "berth/tokenizer/pattern_matches.h"

#include <oniguruma.h>

#include <mutex>
#include <optional>

#include "berth/core/error.h"
#include "utf8.h"
#include "word_split.h"

namespace berth::tokenizer {
namespace {

void initialize_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

std::string onig_message(int code, OnigErrorInfo* info) {
  OnigUChar text[ONIG_MAX_ERROR_MESSAGE_LEN];
  const int length = info ? onig_error_code_to_str(text, code, info) : onig_error_code_to_str(text, code);
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(length > 0 ? length : 0));
}

}  // namespace

struct Regex::Impl {
  OnigRegex regex = nullptr;
  std::optional<WordSplit> words;
  ~Impl() {
    if (regex) onig_free(regex);
  }
};

Regex::Regex(const std::string& pattern, const std::string& where, bool scan_known_patterns)
    : impl_(std::make_unique<Impl>()) {
  if (scan_known_patterns) impl_->words = word_split_for(pattern);
  initialize_oniguruma();
  OnigErrorInfo info;
  const auto* begin = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int code = onig_new(&impl_->regex, begin, begin + pattern.size(), ONIG_OPTION_NONE,
                            ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
  BERTH_CHECK(code == ONIG_NORMAL, where, ": the regular expression ", pattern,
              " does not compile: ", onig_message(code, &info),
              ". Fix: write a pattern Oniguruma (HF tokenizers' regex engine) accepts");
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

namespace {

// One search region per thread, reused by every search on it.
OnigRegion* thread_region() {
  struct Region {
    OnigRegion* region = onig_region_new();
    ~Region() { onig_region_free(region, 1); }
  };
  thread_local Region region;
  return region.region;
}

// The onig crate's find_iter over text: calls found(begin, end) for every match, in bytes.
template <typename Found>
void for_each_match(OnigRegex regex, std::string_view text, Found found) {
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = begin + text.size();
  OnigRegion* region = thread_region();
  size_t from = 0;
  std::optional<size_t> last_match_end;
  while (from <= text.size()) {
    const int status = onig_search(regex, begin, end, begin + from, end, region, ONIG_OPTION_NONE);
    if (status == ONIG_MISMATCH) break;
    BERTH_BUG(status >= 0, "Oniguruma search failed: ", onig_message(status, nullptr));
    const auto match_begin = static_cast<size_t>(region->beg[0]);
    const auto match_end = static_cast<size_t>(region->end[0]);
    if (match_begin == match_end && last_match_end == match_end) {
      if (from >= text.size()) break;
      utf8::decode_valid(text.data(), from);  // moves `from` past one code point
      continue;
    }
    found(match_begin, match_end);
    from = match_end;
    last_match_end = match_end;
  }
}

}  // namespace

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  for_each_match(impl_->regex, text, [&](size_t b, size_t e) { out.emplace_back(b, e); });
  return out;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(const AlignedText& text) const {
  std::vector<std::pair<size_t, size_t>> out;
  find_all(text, 0, text.chars.size(), out);
  return out;
}

void Regex::find_all(const AlignedText& text, size_t from, size_t to,
                     std::vector<std::pair<size_t, size_t>>& out) const {
  if (impl_->words) return split_words(*impl_->words, text, from, to, out);
  // The span's UTF-8, and the code point index of each byte (plus one past the end).
  thread_local std::string utf8;
  thread_local std::vector<uint32_t> char_at;
  utf8.clear();
  char_at.clear();
  for (size_t i = from; i < to; ++i) {
    char bytes[4];
    const size_t n = utf8::encode(text.chars[i].c, bytes);
    utf8.append(bytes, n);
    char_at.insert(char_at.end(), n, static_cast<uint32_t>(i - from));
  }
  char_at.push_back(static_cast<uint32_t>(to - from));
  for_each_match(impl_->regex, utf8, [&](size_t b, size_t e) { out.emplace_back(char_at[b], char_at[e]); });
}

std::vector<std::pair<size_t, size_t>> pattern_matches(const std::string& pattern, std::string_view text,
                                                       bool use_scans) {
  return Regex(pattern, "pattern", use_scans).find_all(AlignedText::from_utf8(text));
}

}  // namespace berth::tokenizer
