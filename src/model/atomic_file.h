// Writing a file so that readers see the old file or the whole new one, never a half-written one.
#pragma once

#include "berth/core/error.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <system_error>

namespace berth {

// A name next to `path` (same directory, so the rename stays on one filesystem) no other writer picks.
inline std::string temporary_path_for(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

// Runs write(temp) to create a temporary file, then renames it over `path`. The temporary is removed
// when write throws or the rename fails, and the error propagates.
inline void replace_file_atomically(const std::string& path,
                                    const std::function<void(const std::string&)>& write) {
  const std::string temp = temporary_path_for(path);
  try {
    write(temp);
    std::error_code error;
    std::filesystem::rename(temp, path, error);
    BERTH_CHECK(!error, path, ": cannot replace the file (", error.message(),
                "). Fix: check that the directory is writable");
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw;
  }
}

inline void write_file_atomically(const std::string& path, const std::string& bytes) {
  replace_file_atomically(path, [&](const std::string& temp) {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    BERTH_CHECK(out.good(), temp,
                ": cannot create the file. Fix: check that the directory exists and is writable");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    BERTH_CHECK(!out.fail(), temp, ": writing failed (disk full?). Fix: free space and write again");
  });
}

}  // namespace berth
