// Validators for the commands' own numeric, choice and file flags: each refusal says what was expected, what
// was found and the fix (CLI11 prints it after the flag's name and the command exits 2). Count flags parsed
// into size_t need one most: CLI11 would wrap "-1" around to 2^64 - 1 and carry on with it.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "berth/core/input_file.h"

namespace berth::cli {

namespace detail {
inline bool digits_only(const std::string& text) {
  return !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
}
}  // namespace detail

// Digits only, so "-1", "1e3" and "nan" are refused.
inline CLI::Validator whole_number(const std::string& fix) {
  return CLI::Validator(
      [fix](std::string& text) -> std::string {
        if (detail::digits_only(text)) return "";
        return "expected a whole number >= 0, found '" + text + "'. Fix: " + fix;
      },
      "N");
}

// Digits only and not 0: a count that must count something.
inline CLI::Validator positive_whole_number(const std::string& fix) {
  return CLI::Validator(
      [fix](std::string& text) -> std::string {
        if (detail::digits_only(text) && text.find_first_not_of('0') != std::string::npos) return "";
        return "expected a whole number >= 1, found '" + text + "'. Fix: " + fix;
      },
      "N");
}

// A finite number in [low, high].
inline CLI::Validator number_between(double low, double high, const std::string& fix) {
  return CLI::Validator(
      [low, high, fix](std::string& text) -> std::string {
        double value = 0;
        if (CLI::detail::lexical_cast(text, value) && std::isfinite(value) && value >= low && value <= high)
          return "";
        std::ostringstream expected;
        expected << "expected a number from " << low << " to " << high;
        return expected.str() + ", found '" + text + "'. Fix: " + fix;
      },
      "NUMBER");
}

// A finite number >= 0.
inline CLI::Validator non_negative_number(const std::string& fix) {
  return CLI::Validator(
      [fix](std::string& text) -> std::string {
        double value = 0;
        if (CLI::detail::lexical_cast(text, value) && std::isfinite(value) && value >= 0) return "";
        return "expected a number >= 0, found '" + text + "'. Fix: " + fix;
      },
      "NUMBER");
}

// One of `choices` (CLI::IsMember names them but not the fix).
inline CLI::Validator one_of(const std::vector<std::string>& choices, const std::string& fix) {
  std::string list;
  for (const std::string& choice : choices) list += (list.empty() ? "" : ", ") + choice;
  return CLI::Validator(
      [choices, list, fix](std::string& text) -> std::string {
        for (const std::string& choice : choices)
          if (text == choice) return "";
        return "expected one of " + list + ", found '" + text + "'. Fix: " + fix;
      },
      "{" + list + "}");
}

// An existing file, not a directory (CLI::ExistingFile says which it found, but not the fix).
inline CLI::Validator input_file(const std::string& what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        try {
          check_input_file(text, what);
          return "";
        } catch (const Error& e) {
          return e.what();
        }
      },
      "FILE");
}

}  // namespace berth::cli
