// Starting one worker process: its environment, its program on PATH, fork/exec into its own process group
// with stdout and stderr on pipes; and how it ended, from its waitpid status (private to the library).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace berth::launch::detail {

// The environment as name -> value, starting from this process's own.
using Environment = std::map<std::string, std::string>;
Environment current_environment();

// `program` as execve needs it: a path containing '/' is taken as given (it must be executable); a bare name
// is searched on PATH. Throws berth::Error when there is nothing to run.
std::string resolve_program(const std::string& program, const Environment& env);

struct SpawnedProcess {
  pid_t pid = -1;
  int stdout_fd = -1;  // read ends, close-on-exec, owned by the caller
  int stderr_fd = -1;
};

// Forks and execs `path` with `args` (args[0] included) and `env`. The child leads a new process group (so a
// signal to -pid reaches whatever the worker itself started, such as a shell's children), has default
// SIGINT/SIGTERM/SIGPIPE handling and no blocked signals. Throws berth::Error when pipes or fork fail; an
// exec failure shows as exit status 127 with the reason on the worker's stderr.
SpawnedProcess spawn_process(const std::string& path, const std::vector<std::string>& args,
                             const Environment& env);

// waitpid status -> "exit status 3" / "killed by signal SIGKILL".
std::string describe_status(int status);

// The exit code a shell would report for the same status: the exit status, or 128 + the signal.
int exit_code_of(int status);

// Whether the process did not exit with status 0.
bool failed(int status);

}  // namespace berth::launch::detail
