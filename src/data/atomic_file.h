// Writing a file so that readers see the old content or the whole new one, never half of it (private).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "berth/core/error.h"

namespace berth::data::detail {

// Calls write(stream) on a temporary file next to `path`, then renames it to `path` (atomic on POSIX within
// one file system). On any failure the temporary file is removed and berth::Error names the path and the
// reason.
template <typename WriteFn>
void write_file_atomically(const std::string& path, WriteFn&& write) {
  static std::atomic<unsigned> counter{0};
  const std::string temp = path + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    BERTH_CHECK(out.good(), path, ": cannot create ", temp, " (", std::strerror(errno),
                "). Fix: make sure the folder exists and is writable");
    try {
      write(out);
    } catch (...) {
      out.close();
      std::remove(temp.c_str());
      throw;
    }
    out.close();
    if (!out) {
      const std::string reason = std::strerror(errno);
      std::remove(temp.c_str());
      BERTH_FAIL(path, ": writing failed (", reason, "). Fix: check free space and permissions");
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    BERTH_FAIL(path, ": cannot rename ", temp, " into place (", reason,
               "). Fix: make sure the path is not a folder and the folder is writable");
  }
}

}  // namespace berth::data::detail
