// Input paths checked before they are read: a directory or a missing path where a file is expected.
#pragma once

#include <string>

namespace berth {

// Throws berth::Error unless `path` names an existing file that is not a directory (an ifstream opens a
// directory without complaint on Linux and then reads nothing, or throws a bare ios_base::failure). `what`
// names the input in the message, e.g. "--deepspeed config".
void check_input_file(const std::string& path, const std::string& what);

}  // namespace berth
