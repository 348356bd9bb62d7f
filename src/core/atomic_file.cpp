// write_file_atomically: unique temporary file, fsync, rename; the temporary never outlives a failure.
#include "berth/core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "berth/core/error.h"

namespace berth {
namespace {

std::string errno_text() { return std::strerror(errno); }

// Creates the temporary file exclusively (O_EXCL), so two writers never share one.
std::string create_temporary_beside(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return temp;
    }
    if (errno != EEXIST) break;
  }
  BERTH_FAIL(path, ": cannot create a temporary file beside it (", errno_text(),
             "). Fix: make sure the folder exists and is writable");
}

void flush_to_disk(const std::string& temp, const std::string& path) {
  int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
  BERTH_CHECK(fd >= 0, path, ": cannot reopen ", temp, " (", errno_text(), ")");
  // Durable before it replaces the old file: a crash after the rename must not leave an empty file.
  const bool synced = ::fsync(fd) == 0;
  const std::string reason = errno_text();
  ::close(fd);
  BERTH_CHECK(synced, path, ": flushing ", temp, " to disk failed (", reason, "). Fix: check free space");
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(std::ostream& out)>& write) {
  const std::string temp = create_temporary_beside(path);
  try {
    {
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      BERTH_CHECK(out.good(), path, ": cannot open ", temp, " (", errno_text(),
                  "). Fix: make sure the folder is writable");
      write(out);
      out.flush();
      BERTH_CHECK(out.good(), path, ": writing ", temp, " failed (", errno_text(),
                  "). Fix: check free space and permissions");
    }
    flush_to_disk(temp, path);
    BERTH_CHECK(::rename(temp.c_str(), path.c_str()) == 0, path, ": cannot move ", temp, " into place (",
                errno_text(), "). Fix: make sure the path is not a folder and its folder is writable");
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  write_file_atomically(
      path, [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
}

}  // namespace berth
