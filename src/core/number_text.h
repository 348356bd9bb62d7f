// The shortest decimal text of a double that reads back to it, for messages and saved arguments (private).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

namespace berth::text {

// "2e-05", "0.9"; whole numbers as integers ("500", not "5e+02"), as a user writes a step count.
inline std::string shortest_number_text(double value) {
  if (std::floor(value) == value && std::fabs(value) < 1e15)
    return std::to_string(static_cast<int64_t>(value));
  for (int precision = 1; precision <= 17; ++precision) {
    std::ostringstream out;
    out.precision(precision);
    out << value;
    if (std::strtod(out.str().c_str(), nullptr) == value) return out.str();
  }
  std::ostringstream out;  // inf, nan
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace berth::text
