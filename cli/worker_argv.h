// The command line a worker of `berth train --nproc-per-node N` runs: this program's own argv, rewritten.
#pragma once

#include <string>
#include <vector>

namespace berth::cli {

// `argv` is the program's own argv (argv[0] at least; an empty one is a berth bug). "--nproc-per-node N",
// "--nproc-per-node=N" (and the underscore spelling) are removed, so that a worker does not launch again,
// and argv[0] becomes this executable's path (/proc/self/exe resolved). What follows "--" is kept as it is.
// Returns the removed value in `*nproc_text` when given ("" when the flag was absent); throws berth::Error
// when the flag ends the command line without its value.
std::vector<std::string> worker_argv_without_flag(const std::vector<std::string>& argv,
                                                  std::string* nproc_text = nullptr,
                                                  const std::string& flag = "--nproc-per-node");

}  // namespace berth::cli
