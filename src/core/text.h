// Small string helpers shared by berth's parsers, messages and reports: trim, case, join, integers, printf
// numbers (private to the library).
#pragma once

#include <cctype>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// The items with `separator` between them: join({"a", "b"}, ", ") is "a, b"; {} is "".
inline std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

namespace detail {
template <typename... Numbers>
std::string printf_numbers(const char* format, Numbers... numbers) {
  const int size = std::snprintf(nullptr, 0, format, numbers...);
  if (size <= 0) return "";
  std::string out(static_cast<size_t>(size), '\0');
  std::snprintf(out.data(), out.size() + 1, format, numbers...);
  return out;
}
}  // namespace detail

// One number as printf's `format` writes it ("%.2f", "%.4g", " %3.0f%%|"): fixed decimals or significant
// digits, for reports and progress lines (shortest_number_text gives the shortest exact text instead).
inline std::string printf_number(const char* format, double value) {
  return detail::printf_numbers(format, value);
}

// The same with the precision as an argument: printf_number("%.*f", decimals, value).
inline std::string printf_number(const char* format, int precision, double value) {
  return detail::printf_numbers(format, precision, value);
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
