// Small string helpers shared by berth's parsers of flags and environment variables (private to the library).
#pragma once

#include <cctype>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace berth::text {

inline std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

inline std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Digits only, within int range: "+1", "-1", " 1", "1x" and "" are refused rather than half-read.
inline std::optional<int> parse_digits(std::string_view digits) {
  if (digits.empty()) return std::nullopt;
  long long value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
    if (value > std::numeric_limits<int>::max()) return std::nullopt;
  }
  return static_cast<int>(value);
}

// Surrounding spaces and one leading '-' allowed, then digits only: "1.5" and "2x" are refused.
inline std::optional<int> parse_integer(std::string_view text) {
  text = trim(text);
  const bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  std::optional<int> value = parse_digits(text);
  if (value && negative) return -*value;
  return value;
}

}  // namespace berth::text
