// A save that ran out of disk space: telling it from other failures, and the error that names the path, the
// space needed and the space left (statvfs), with the fix.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

namespace berth::train {

// The bytes an unprivileged writer may still use on the file system holding `path` (or its nearest existing
// parent); nothing when statvfs fails.
std::optional<uint64_t> available_bytes(const std::string& path);

// The bytes of the regular files under `path` (a file's own size for a file); 0 when it does not exist.
uint64_t bytes_on_disk(const std::string& path);

// Whether `error` is a write that found the disk full: a std::filesystem_error or std::system_error with
// ENOSPC or EDQUOT, or a message holding their strerror text ("No space left on device", as berth's own
// write errors and torch's do), or, when needed_bytes is given, a file system with less space left than that.
bool is_disk_full(const std::exception& error, uint64_t needed_bytes = 0, const std::string& path = "");

// Rethrows the exception being handled: as a berth::Error naming `path`, `what` was being saved, the bytes
// needed and the bytes free, and the fix (free space, --save_total_limit, another --output_dir) when
// is_disk_full says so; unchanged otherwise. Call it inside a catch block, after removing any temporary.
[[noreturn]] void rethrow_as_disk_full(const std::string& path, const std::string& what,
                                       uint64_t needed_bytes);

// "1.5 MB (1572864 bytes)": a size for messages.
std::string bytes_text(uint64_t bytes);

}  // namespace berth::train
