// Count flags parsed into size_t: CLI11 would wrap "-1" around to 2^64 - 1 and carry on with it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace berth::cli {

// A validator that accepts digits only, so "-1", "1e3" and "nan" are refused with what was expected and the
// fix (CLI11 prints it after the flag's name and the command exits 2).
inline CLI::Validator whole_number(const std::string& fix) {
  return CLI::Validator(
      [fix](std::string& text) -> std::string {
        if (!text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos)
          return "";
        return "expected a whole number >= 0, found '" + text + "'. Fix: " + fix;
      },
      "N");
}

}  // namespace berth::cli
