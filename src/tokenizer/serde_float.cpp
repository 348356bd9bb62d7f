// serde_json_float: serde_json's default (not correctly rounded) float parsing, digits -> integer -> one
// multiplication or division by an exactly rounded power of ten.
#include "serde_float.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

namespace berth::tokenizer {
namespace {

// serde_json's POW10 table: 1e0 .. 1e308, each the nearest double.
const std::array<double, 309>& powers_of_ten() {
  static const std::array<double, 309> table = [] {
    std::array<double, 309> t{};
    for (int i = 0; i < 309; ++i)
      t[static_cast<size_t>(i)] = std::strtod(("1e" + std::to_string(i)).c_str(), nullptr);
    return t;
  }();
  return table;
}

// serde_json's f64_from_parts.
double from_parts(bool negative, uint64_t significand, int64_t exponent) {
  double f = static_cast<double>(significand);
  while (true) {
    const uint64_t magnitude =
        exponent < 0 ? static_cast<uint64_t>(-exponent) : static_cast<uint64_t>(exponent);
    if (magnitude <= 308) {
      const double power = powers_of_ten()[magnitude];
      f = exponent >= 0 ? f * power : f / power;
      break;
    }
    if (f == 0 || exponent >= 0) {  // serde_json refuses an overflow; JSON that parsed here has none
      if (exponent >= 0) f = std::numeric_limits<double>::infinity();
      break;
    }
    f /= 1e308;
    exponent += 308;
  }
  return negative ? -f : f;
}

}  // namespace

double serde_json_float(std::string_view text) {
  size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  uint64_t significand = 0;
  int64_t exponent = 0;
  bool overflowed = false;
  auto digit = [&](char c, bool after_point) {
    const auto d = static_cast<uint64_t>(c - '0');
    if (!overflowed && significand <= (std::numeric_limits<uint64_t>::max() - d) / 10) {
      significand = significand * 10 + d;
      if (after_point) --exponent;
      return;
    }
    // Past 19-20 digits serde_json keeps counting integer digits into the exponent and drops the decimals.
    overflowed = true;
    if (!after_point) ++exponent;
  };
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) digit(text[i], false);
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) digit(text[i], true);
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool negative_exponent = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    int64_t value = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && value < 100000; ++i)
      value = value * 10 + (text[i] - '0');
    exponent += negative_exponent ? -value : value;
  }
  return from_parts(negative, significand, exponent);
}

double serde_json_float(double nearest) {
  std::array<char, 64> digits{};
  const auto [end, error] = std::to_chars(digits.data(), digits.data() + digits.size(), nearest);
  if (error != std::errc()) return nearest;
  return serde_json_float(std::string_view(digits.data(), static_cast<size_t>(end - digits.data())));
}

}  // namespace berth::tokenizer
