// Writing a file so that readers see the old content or the whole new one, never half of it.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace berth {

// Calls write(out) on a fresh temporary file beside `path` (same folder, so the rename stays on one file
// system), flushes it to disk, then renames it over `path`. When write throws or any step fails, the
// temporary file is removed, `path` is untouched, and the error propagates (berth::Error naming the path,
// the reason and the fix for I/O failures).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream& out)>& write);

// The same for content already in memory.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace berth
