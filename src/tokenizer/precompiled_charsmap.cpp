// The double array as Darts lays it out: unit bit 8 marks a node with a value (in the unit its offset leads
// to), bits 0-7 and 31 its label, bits 10-31 its offset to the children (shifted by 8 when bit 9 is set).
#include "precompiled_charsmap.h"

#include "berth/core/error.h"
#include "utf8.h"

namespace berth::tokenizer {
namespace {

bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1) != 0; }
uint32_t value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

uint32_t read_u32(std::string_view bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob, const std::string& where) : where_(where) {
  if (blob.empty()) return;
  BERTH_CHECK(blob.size() >= 4, where, ": ", blob.size(),
              " bytes, too short for SentencePiece's charsmap (a 4-byte trie size first). Fix: use the "
              "precompiled_charsmap of the SentencePiece model's normalizer_spec");
  const size_t units = read_u32(blob, 0) / 4;  // the crate reads whole units and ignores a remainder
  BERTH_CHECK(units <= (blob.size() - 4) / 4, where, ": the trie is ", units, " units but only ",
              (blob.size() - 4) / 4,
              " follow. Fix: use the precompiled_charsmap of the SentencePiece model's "
              "normalizer_spec, whole");
  units_.reserve(units);
  for (size_t i = 0; i < units; ++i) units_.push_back(read_u32(blob, 4 + 4 * i));
  replacements_ = std::string(blob.substr(4 + 4 * units));
  size_t at = 0;
  try {
    for (size_t pos = 0; pos < replacements_.size(); at = pos) utf8::decode(replacements_, pos);
  } catch (const Error&) {
    BERTH_FAIL(
        where, ": its replacements are not UTF-8 (at byte ", at, " of ", replacements_.size(),
        "). Fix: use the precompiled_charsmap of the SentencePiece model's normalizer_spec, unmodified");
  }
}

uint32_t PrecompiledCharsmap::unit(size_t index) const {
  BERTH_CHECK(index < units_.size(), where_, ": the trie points at unit ", index, " of ", units_.size(),
              ". Fix: use the precompiled_charsmap of the SentencePiece model's normalizer_spec, unmodified");
  return units_[index];
}

std::string_view PrecompiledCharsmap::replacement_at(uint32_t at) const {
  BERTH_CHECK(
      at <= replacements_.size() && (at == replacements_.size() || !utf8::is_continuation(replacements_[at])),
      where_, ": a replacement starts at byte ", at, " of ", replacements_.size(),
      ", not at a character. Fix: use the precompiled_charsmap of the SentencePiece model's "
      "normalizer_spec, unmodified");
  const size_t end = replacements_.find('\0', at);
  return std::string_view(replacements_)
      .substr(at, (end == std::string::npos ? replacements_.size() : end) - at);
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view key) const {
  if (units_.empty()) return std::nullopt;
  size_t node = offset(unit(0));
  for (char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) break;
    node ^= c;
    const uint32_t u = unit(node);
    if (label(u) != c) return std::nullopt;
    node ^= offset(u);
    if (has_leaf(u)) return replacement_at(value(unit(node)));
  }
  return std::nullopt;
}

}  // namespace berth::tokenizer
