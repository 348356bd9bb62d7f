// check_input_file and read_input_file: a file expected, a directory, nothing or an unreadable file found,
// named with the fix.
#include "berth/core/input_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "berth/core/error.h"

namespace berth {

void check_input_file(const std::string& path, const std::string& what, const std::string& fix) {
  namespace fs = std::filesystem;
  BERTH_CHECK(!path.empty(), what,
              ": expected a file path, found an empty string. Fix: pass the file's path");
  std::error_code error;
  const fs::file_type type = fs::status(path, error).type();
  BERTH_CHECK(type != fs::file_type::not_found && type != fs::file_type::none, what, " ", path,
              ": expected a file, found nothing at that path. Fix: ", fix);
  BERTH_CHECK(type != fs::file_type::directory, what, " ", path,
              ": expected a file, found a directory. Fix: pass a file inside it, not the directory");
}

std::string read_input_file(const std::string& path, const std::string& what, const std::string& fix) {
  check_input_file(path, what, fix);
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  BERTH_CHECK(in.good(), what, " ", path, ": cannot open it (", std::strerror(errno), "). Fix: ", fix);
  std::ostringstream text;
  text << in.rdbuf();
  BERTH_CHECK(!in.bad(), what, " ", path, ": reading failed (", std::strerror(errno),
              "). Fix: check the file and its disk");
  return text.str();
}

}  // namespace berth
