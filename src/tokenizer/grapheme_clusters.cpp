// Boundaries between code points: utf8proc_grapheme_break_stateful on stand-ins that carry the crate's class
// (utf8proc's own classes are Unicode 15's), then GB9c, which utf8proc 2.8 lacks.
#include "grapheme_clusters.h"

#include <utf8proc.h>

#include <algorithm>
#include <iterator>

namespace berth::tokenizer {
namespace {

struct GraphemeRange {
  char32_t first;
  char32_t last;
  utf8proc_boundclass_t boundclass;
};

struct CodePointRange {
  char32_t first;
  char32_t last;
};

#include "grapheme_breaks.inc"

template <typename Range, size_t N>
const Range* find_range(const Range (&ranges)[N], char32_t c) {
  const Range* it = std::upper_bound(std::begin(ranges), std::end(ranges), c,
                                     [](char32_t value, const Range& range) { return value < range.first; });
  return it != std::begin(ranges) && c <= (it - 1)->last ? it - 1 : nullptr;
}

// A code point of each class, by utf8proc_boundclass_t, that every utf8proc version classes the same.
constexpr utf8proc_int32_t kStandIns[] = {'a',    'a',    0x0D,   0x0A,   0x01,    0x0300, 0x1100,
                                          0x1161, 0x11A8, 0xAC00, 0xAC01, 0x1F1E6, 0x0903, 0x0600,
                                          0x200D, 'a',    'a',    'a',    'a',     0x00A9};
static_assert(UTF8PROC_BOUNDCLASS_EXTEND == 5 && UTF8PROC_BOUNDCLASS_ZWJ == 14 &&
              UTF8PROC_BOUNDCLASS_EXTENDED_PICTOGRAPHIC == 19);

// c, or a stand-in of the class the crate gives it.
utf8proc_int32_t stand_in(char32_t c) {
  if (c >= 0x20 && c < 0x7F) return static_cast<utf8proc_int32_t>(c);  // all Other
  const GraphemeRange* range = find_range(kGraphemeClasses, c);
  return range == nullptr ? 'a' : kStandIns[range->boundclass];
}

bool is_linker(char32_t c) { return std::binary_search(std::begin(kIncbLinkers), std::end(kIncbLinkers), c); }

// GB9c: no break between an InCB consonant and chars[at] (another) when one or more linkers, mixed with InCB
// extends, stand between them.
bool joins_conjunct(const AlignedText::Char* chars, size_t at) {
  if (find_range(kIncbConsonants, chars[at].c) == nullptr) return false;
  size_t linkers = 0;
  for (size_t i = at; i > 0; --i) {
    const char32_t c = chars[i - 1].c;
    if (is_linker(c)) {
      ++linkers;
    } else if (find_range(kIncbExtends, c) == nullptr) {
      return linkers > 0 && find_range(kIncbConsonants, c) != nullptr;
    }
  }
  return false;
}

}  // namespace

size_t GraphemeClusters::cluster_end(const AlignedText::Char* chars, size_t size, size_t begin) {
  size_t end = begin + 1;
  for (; end < size; ++end) {
    const char32_t before = chars[end - 1].c, c = chars[end].c;
    if (before < 0x80 && c < 0x80) {
      state_ = 0;  // after an ASCII code point utf8proc's state is just its class, as a fresh one reads it
      if (before == '\r' && c == '\n') continue;
      break;
    }
    if (utf8proc_grapheme_break_stateful(stand_in(before), stand_in(c), &state_) &&
        !joins_conjunct(chars, end))
      break;
  }
  return end;
}

}  // namespace berth::tokenizer
