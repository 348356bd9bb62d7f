// Input files checked and read in one place: a directory, a missing path or an unreadable file where a file
// is expected is an error naming the input, the path, what was found and the fix.
#pragma once

#include <string>

namespace berth {

// Throws berth::Error unless `path` names an existing file that is not a directory (an ifstream opens a
// directory without complaint on Linux and then reads nothing, or throws a bare ios_base::failure). `what`
// names the input in the message, e.g. "--deepspeed config"; `fix` is the hint for a missing file.
void check_input_file(const std::string& path, const std::string& what,
                      const std::string& fix = "check the path");

// The whole file at `path`, checked as check_input_file does; a file that cannot be opened or read
// (permissions, an I/O error) is an error with the system's reason. Every input berth reads whole goes
// through here.
std::string read_input_file(const std::string& path, const std::string& what,
                            const std::string& fix = "check the path");

}  // namespace berth
