// Shared test helpers: the text of the error a call throws, substring checks, scoped environment variables.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "berth/core/error.h"

namespace berth::testing {

// The message of the ErrorType that `fn` throws; fails the test when it throws nothing.
template <typename ErrorType = berth::Error, typename Fn>
std::string error_text(Fn&& fn) {
  try {
    fn();
  } catch (const ErrorType& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error, nothing was thrown";
  return "";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline bool contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& line : lines)
    if (contains(line, part)) return true;
  return false;
}

inline void expect_contains(const std::string& text, const std::vector<std::string>& parts) {
  for (const std::string& part : parts) EXPECT_TRUE(contains(text, part)) << "'" << part << "' in: " << text;
}

// Sets (or, with nullptr, unsets) environment variables for one scope and restores them afterwards.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value) {
        setenv(name, value, 1);
      } else {
        unsetenv(name);
      }
    }
  }
  ScopedEnv(const char* name, const char* value) : ScopedEnv({{name, value}}) {}
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace berth::testing
