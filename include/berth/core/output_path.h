// Output paths checked before any work: a directory flag naming a file, a file flag naming a directory.
#pragma once

#include <string>

namespace berth {

// Throws berth::Error unless `path` can become a directory: it is one already, or it does not exist and its
// nearest existing ancestor is a directory (create_directories would otherwise fail with a bare
// filesystem_error after the data and the model were loaded). `flag` names the option in the message.
void check_output_directory(const std::string& path, const std::string& flag);

// Throws berth::Error unless `path` can be written as a file: it is not an existing directory and its folder
// exists (as a directory). `flag` names the option in the message.
void check_output_file(const std::string& path, const std::string& flag);

}  // namespace berth
