// check_output_directory / check_output_file: refuse an output path that cannot work, naming the fix.
#include "berth/core/output_path.h"

#include <filesystem>
#include <system_error>

#include "berth/core/error.h"

namespace berth {
namespace {

namespace fs = std::filesystem;

// What is at `path` without throwing (a component that is a file reads as not_found or not_a_directory).
fs::file_type type_of(const fs::path& path) {
  std::error_code error;
  return fs::status(path, error).type();
}

// The nearest ancestor of `path` that exists ("." for a relative path with none).
fs::path nearest_existing_ancestor(const fs::path& path) {
  fs::path ancestor = path.parent_path();
  while (!ancestor.empty() && type_of(ancestor) == fs::file_type::not_found)
    ancestor = ancestor.parent_path();
  return ancestor.empty() ? fs::path(".") : ancestor;
}

}  // namespace

void check_output_directory(const std::string& path, const std::string& flag) {
  BERTH_CHECK(!path.empty(), flag, " is empty. Fix: ", flag, " DIR");
  const fs::file_type type = type_of(path);
  BERTH_CHECK(type == fs::file_type::directory || type == fs::file_type::not_found, flag, " ", path,
              ": expected a directory (or a path to create one at), found an existing file. Fix: pass a new "
              "or existing directory, or move the file away");
  if (type == fs::file_type::directory) return;
  const fs::path ancestor = nearest_existing_ancestor(path);
  BERTH_CHECK(type_of(ancestor) == fs::file_type::directory, flag, " ", path,
              ": cannot create the directory because ", ancestor.string(),
              " is a file, not a directory. Fix: choose a path under a directory");
}

void check_output_file(const std::string& path, const std::string& flag) {
  BERTH_CHECK(!path.empty(), flag, " is empty. Fix: ", flag, " FILE");
  BERTH_CHECK(type_of(path) != fs::file_type::directory, flag, " ", path,
              ": expected a file to write, found a directory. Fix: name a file (e.g. ", path, "/out.jsonl)");
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  const fs::file_type type = type_of(folder);
  BERTH_CHECK(type == fs::file_type::directory, flag, " ", path, ": its folder ", folder.string(),
              type == fs::file_type::not_found ? " does not exist" : " is not a directory",
              ". Fix: create the folder first (mkdir -p ", folder.string(), ") or write elsewhere");
}

}  // namespace berth
