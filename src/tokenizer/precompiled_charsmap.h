// SentencePiece's precompiled_charsmap as the spm_precompiled crate reads it: a little-endian u32 byte size,
// that many bytes of a Darts double-array trie over UTF-8 keys, then the replacements, each ended by '\0'
// (private to the library).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth::tokenizer {

class PrecompiledCharsmap {
 public:
  // Throws berth::Error naming `where` when the blob is cut short or its replacements are not UTF-8. An
  // empty blob, or one with an empty trie, maps nothing.
  PrecompiledCharsmap(std::string_view blob, const std::string& where);

  bool empty() const { return units_.empty(); }
  // The replacement of the shortest prefix of key (up to its first '\0') that the trie has, or none: the
  // crate's Precompiled::transform, which takes the first of its common-prefix matches.
  std::optional<std::string_view> transform(std::string_view key) const;

 private:
  uint32_t unit(size_t index) const;
  std::string_view replacement_at(uint32_t offset) const;

  std::vector<uint32_t> units_;
  std::string replacements_;
  std::string where_;
};

}  // namespace berth::tokenizer
