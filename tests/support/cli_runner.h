// Runs the built berth command as users do (through a shell, bounded by timeout) and captures its output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace berth::testing {

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout, plus stderr when merged
};

// Runs `command_line` (a program and its arguments, through a shell) as run_cli does: launcher variables
// removed, `env_assignments` applied, cut off after `timeout_seconds`.
inline CliResult run_program(const std::string& command_line, bool merge_stderr = true,
                             const std::string& env_assignments = "", int timeout_seconds = 120) {
  std::string command =
      "env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u OMPI_COMM_WORLD_RANK " +
      env_assignments + " timeout " + std::to_string(timeout_seconds) + " " + command_line +
      (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// `env_assignments` go through env(1) (e.g. "-u RANK FOO=1"); launcher variables from the test's own
// environment are removed so each case starts clean. Every run is cut off after 120 s.
inline CliResult run_cli(const std::string& args, bool merge_stderr = true,
                         const std::string& env_assignments = "") {
  return run_program(std::string(BERTH_CLI_PATH) + " " + args, merge_stderr, env_assignments);
}

}  // namespace berth::testing
