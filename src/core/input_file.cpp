// check_input_file: a file expected, a directory or nothing found, named with the fix.
#include "berth/core/input_file.h"

#include <filesystem>
#include <system_error>

#include "berth/core/error.h"

namespace berth {

void check_input_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  BERTH_CHECK(!path.empty(), what,
              ": expected a file path, found an empty string. Fix: pass the file's path");
  std::error_code error;
  const fs::file_type type = fs::status(path, error).type();
  BERTH_CHECK(type != fs::file_type::not_found && type != fs::file_type::none, what, " ", path,
              ": expected a file, found nothing at that path. Fix: check the path");
  BERTH_CHECK(type != fs::file_type::directory, what, " ", path,
              ": expected a file, found a directory. Fix: pass a file inside it, not the directory");
}

}  // namespace berth
