// Rewrites this program's argv into a worker's: the launcher's flag removed, argv[0] made absolute.
#include "worker_argv.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstddef>

#include "berth/core/error.h"

namespace berth::cli {
namespace {

// This executable's path, or `fallback` where /proc/self/exe cannot be read.
std::string own_executable(const std::string& fallback) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  return n > 0 ? std::string(self, static_cast<size_t>(n)) : fallback;
}

}  // namespace

std::vector<std::string> worker_argv_without_flag(const std::vector<std::string>& argv,
                                                  std::string* nproc_text, const std::string& flag) {
  BERTH_BUG(!argv.empty(), "worker_argv_without_flag is given the program's own argv, which holds argv[0]");
  std::string underscored = flag;
  std::replace(underscored.begin() + 2, underscored.end(), '-', '_');
  std::vector<std::string> out{own_executable(argv.front())};
  if (nproc_text) nproc_text->clear();
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {  // everything after it belongs to the program, not to us
      out.insert(out.end(), argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
      break;
    }
    if (a == flag || a == underscored) {
      BERTH_CHECK(i + 1 < argv.size(), flag, " needs a value. Fix: pass ", flag, " N (or auto).");
      if (nproc_text) *nproc_text = argv[i + 1];
      ++i;
      continue;
    }
    const std::string* joined = nullptr;  // "--nproc-per-node=2" spelling
    for (const std::string* name : {&flag, static_cast<const std::string*>(&underscored)})
      if (a.rfind(*name + "=", 0) == 0) joined = name;
    if (joined == nullptr) {
      out.push_back(a);
    } else if (nproc_text) {
      *nproc_text = a.substr(joined->size() + 1);
    }
  }
  return out;
}

}  // namespace berth::cli
