// Per-code-point properties exactly as HF tokenizers (Rust) sees them: its character classes, lowercase, NFD
// and combining classes (private to the library; data in unicode_props_data.inc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace berth::tokenizer::unicode {

// Character classes, as bit flags.
enum Class : uint8_t {
  kRemove = 1,      // clean_text deletes it: \0, U+FFFD, control/format/private-use (not \t \n \r)
  kCleanSpace = 2,  // clean_text turns it into ' ' (BERT's whitespace: \t \n \r and White_Space)
  kWhitespace = 4,  // the pre-tokenizer splits on it (Rust's char::is_whitespace)
  kPunct = 8,       // the pre-tokenizer isolates it (ASCII punctuation or a Unicode P* category)
  kMark = 16,       // strip_accents drops it after NFD (unicode_categories' "nonspacing mark")
  kChinese = 32,    // handle_chinese_chars surrounds it with spaces (CJK ideograph blocks)
};

// Two-stage lookup table over all of Unicode, built once on first use.
struct ClassTable {
  std::vector<uint16_t> blocks;  // per 256 code points: index of its block in `classes`
  std::vector<uint8_t> classes;  // distinct 256-entry blocks, concatenated
};

const ClassTable& class_table();

inline uint8_t classes_of(const ClassTable& table, char32_t cp) {
  return table.classes[static_cast<size_t>(table.blocks[cp >> 8]) * 256 + (cp & 0xFF)];
}

inline uint8_t classes_of(char32_t cp) { return classes_of(class_table(), cp); }

// The classes of ASCII, a constant table for the hot loops (constant-initialized: usable at any time).
struct AsciiClasses {
  uint8_t of[128] = {};
};
extern const AsciiClasses kAsciiClasses;

// Rust's char::to_lowercase: writes 1-3 code points to out and returns how many.
int lowercase(char32_t cp, char32_t* out);

// The full canonical decomposition (NFD, before reordering) of cp, as Rust's unicode-normalization data has
// it: writes up to 4 code points to out and returns how many.
int decompose(char32_t cp, char32_t* out);

// Canonical combining class as Rust's normalization data has it (0 for marks newer than that data).
int combining_class(char32_t cp);

}  // namespace berth::tokenizer::unicode
