// Disk-full saves: free space by statvfs, ENOSPC/EDQUOT recognised in any of the error types a save throws,
// and one message with the space needed, the space left and the fix.
#include "berth/train/disk_full.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "berth/core/error.h"

namespace fs = std::filesystem;

namespace berth::train {
namespace {

bool is_space_errno(int value) { return value == ENOSPC || value == EDQUOT; }

bool mentions_space_errno(const std::string& text) {
  return text.find(std::strerror(ENOSPC)) != std::string::npos ||
         text.find(std::strerror(EDQUOT)) != std::string::npos;
}

}  // namespace

std::optional<uint64_t> available_bytes(const std::string& path) {
  fs::path probe = fs::absolute(path);
  std::error_code error;
  while (!probe.empty() && !fs::exists(probe, error) && probe != probe.parent_path())
    probe = probe.parent_path();
  struct statvfs st;
  if (::statvfs(probe.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

uint64_t bytes_on_disk(const std::string& path) {
  std::error_code error;
  if (fs::is_regular_file(path, error)) return fs::file_size(path, error);
  uint64_t total = 0;
  if (!fs::is_directory(path, error)) return 0;
  for (const auto& entry : fs::recursive_directory_iterator(path, error)) {
    std::error_code size_error;
    if (entry.is_regular_file(size_error)) total += entry.file_size(size_error);
  }
  return total;
}

bool is_disk_full(const std::exception& error, uint64_t needed_bytes, const std::string& path) {
  if (const auto* system = dynamic_cast<const std::system_error*>(&error))
    if (is_space_errno(system->code().value())) return true;
  if (mentions_space_errno(error.what())) return true;
  if (needed_bytes == 0 || path.empty()) return false;
  const std::optional<uint64_t> free = available_bytes(path);
  return free && *free < needed_bytes;
}

std::string bytes_text(uint64_t bytes) {
  const char* units[] = {"bytes", "KB", "MB", "GB", "TB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[64];
  if (unit == 0) return std::to_string(bytes) + " bytes";
  std::snprintf(text, sizeof text, "%.1f %s (%llu bytes)", value, units[unit],
                static_cast<unsigned long long>(bytes));
  return text;
}

void rethrow_as_disk_full(const std::string& path, const std::string& what, uint64_t needed_bytes) {
  try {
    throw;
  } catch (const std::exception& error) {
    // Already this message (a nested save): keep it as it is.
    if (std::string(error.what()).find(": the disk is full: ") != std::string::npos) throw;
    if (!is_disk_full(error, needed_bytes, path)) throw;
    const std::optional<uint64_t> free = available_bytes(path);
    BERTH_FAIL(path, ": the disk is full: saving ", what, " needs about ", bytes_text(needed_bytes), ", and ",
               free ? bytes_text(*free) : std::string("an unknown amount"), " are free on that file system (",
               error.what(),
               "). Nothing was half-written: earlier checkpoints are intact and no temporary file is left. "
               "Fix: free space on that disk, keep fewer checkpoints (--save_total_limit 1), or "
               "pass an --output_dir on a disk with more room");
  }
}

}  // namespace berth::train
