// Writing small input files for tests.
#pragma once

#include <fstream>
#include <string>

#include "support/test_support.h"

namespace berth::testing {

// Writes `content` byte for byte to `name` inside `dir` and returns its path.
inline std::string write_file(const TempDir& dir, const std::string& name, const std::string& content) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

}  // namespace berth::testing
