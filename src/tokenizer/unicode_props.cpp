// HF tokenizers' view of Unicode: its classes from the generated table, the rest from utf8proc with the
// generated exceptions where Rust's Unicode data differs.
#include "tokenizer/unicode_props.h"

#include <utf8proc.h>

#include <algorithm>
#include <map>

#include "berth/core/error.h"

namespace berth::tokenizer::unicode {
namespace {

struct ClassRange {
  char32_t first;
  char32_t last;
  uint8_t classes;
};

struct Mapping {
  char32_t cp;
  int size;
  char32_t values[3];
};

#include "tokenizer/unicode_props_data.inc"

template <typename Table>
const Mapping* find_mapping(const Table& table, char32_t cp) {
  auto it = std::lower_bound(std::begin(table), std::end(table), cp,
                             [](const Mapping& m, char32_t value) { return m.cp < value; });
  return it != std::end(table) && it->cp == cp ? &*it : nullptr;
}

ClassTable build_class_table() {
  constexpr size_t kBlocks = 0x110000 / 256;
  std::vector<uint8_t> flat(0x110000, 0);
  for (const ClassRange& range : kClassRanges)
    std::fill(flat.begin() + range.first, flat.begin() + range.last + 1, range.classes);
  ClassTable table;
  table.blocks.resize(kBlocks);
  std::map<std::vector<uint8_t>, uint16_t> seen;  // most blocks are all zero: store each distinct one once
  for (size_t b = 0; b < kBlocks; ++b) {
    std::vector<uint8_t> block(flat.begin() + b * 256, flat.begin() + (b + 1) * 256);
    auto [it, inserted] = seen.emplace(block, static_cast<uint16_t>(seen.size()));
    if (inserted) table.classes.insert(table.classes.end(), block.begin(), block.end());
    table.blocks[b] = it->second;
  }
  return table;
}

constexpr AsciiClasses ascii_classes() {
  AsciiClasses table;
  for (const ClassRange& range : kClassRanges)
    for (char32_t cp = range.first; cp <= range.last && cp < 128; ++cp) table.of[cp] = range.classes;
  return table;
}

}  // namespace

constexpr AsciiClasses kAsciiClasses = ascii_classes();

const ClassTable& class_table() {
  static const ClassTable table = build_class_table();
  return table;
}

int lowercase(char32_t cp, char32_t* out) {
  if (const Mapping* m = find_mapping(kLowercase, cp)) {
    std::copy(m->values, m->values + m->size, out);
    return m->size;
  }
  out[0] = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
  return 1;
}

int decompose(char32_t cp, char32_t* out) {
  if (const Mapping* m = find_mapping(kDecompositions, cp)) {
    std::copy(m->values, m->values + m->size, out);
    return m->size;
  }
  utf8proc_int32_t buffer[8];
  int boundclass = 0;
  utf8proc_ssize_t n =
      utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buffer, 8, UTF8PROC_DECOMPOSE, &boundclass);
  BERTH_BUG(n >= 1 && n <= 4, "canonical decomposition of U+", static_cast<uint32_t>(cp), " has ", n,
            " parts");
  for (utf8proc_ssize_t i = 0; i < n; ++i) out[i] = static_cast<char32_t>(buffer[i]);
  return static_cast<int>(n);
}

int combining_class(char32_t cp) {
  int ccc = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class;
  if (ccc != 0 && std::binary_search(std::begin(kStarters), std::end(kStarters), cp)) return 0;
  return ccc;
}

}  // namespace berth::tokenizer::unicode
