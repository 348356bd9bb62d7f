// Starts one worker: PATH lookup, environment, fork/exec into its own process group with piped output; and
// reads its waitpid status.
#include "launch/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "berth/core/error.h"
#include "berth/launch/launcher.h"

extern char** environ;

namespace berth::launch::detail {
namespace {

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

void close_quietly(int fd) {
  if (fd >= 0) ::close(fd);
}

}  // namespace

Environment current_environment() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq == nullptr) continue;
    env.emplace(std::string(*entry, static_cast<size_t>(eq - *entry)), std::string(eq + 1));
  }
  return env;
}

std::string resolve_program(const std::string& program, const Environment& env) {
  BERTH_CHECK(!program.empty(), "the command to launch is an empty string. Fix: put the program after '--', ",
              "e.g. berth launch --nproc-per-node 2 -- berth train ...");
  if (program.find('/') != std::string::npos) {
    BERTH_CHECK(is_executable_file(program), "cannot run '", program,
                "': it is not an executable file. Fix: check the path (and chmod +x for a script).");
    return program;
  }
  const auto path_it = env.find("PATH");
  const std::string path = path_it == env.end() ? "/usr/local/bin:/usr/bin:/bin" : path_it->second;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end == start ? "." : path.substr(start, end - start);
    const std::string candidate = dir + "/" + program;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  BERTH_FAIL("cannot run '", program, "': no executable of that name on PATH (", path,
             "). Fix: give its path (e.g. ./build/bin/berth) or add its directory to PATH.");
}

SpawnedProcess spawn_process(const std::string& path, const std::vector<std::string>& args,
                             const Environment& env) {
  // Everything the child touches is built before fork: after fork only async-signal-safe calls are allowed
  // (the caller may have other threads, a test runner's for one).
  std::vector<std::string> env_strings;
  env_strings.reserve(env.size());
  for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const std::string exec_failed = "berth launch: cannot execute " + path + ": ";

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int saved = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close_quietly(fd);
    BERTH_FAIL("cannot create pipes for a worker: ", std::strerror(saved),
               ". Fix: raise the open-file limit (ulimit -n) or start fewer workers.");
  }

  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out_pipe[1], STDOUT_FILENO);  // dup2 clears close-on-exec on the copy
    ::dup2(err_pipe[1], STDERR_FILENO);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGHUP}) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(path.c_str(), argv.data(), envp.data());
    const char* reason = std::strerror(errno);  // glibc's table: no allocation
    ssize_t ignored = ::write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
    ignored = ::write(STDERR_FILENO, reason, std::strlen(reason));
    ignored = ::write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    ::_exit(127);
  }
  const int saved = errno;
  close_quietly(out_pipe[1]);
  close_quietly(err_pipe[1]);
  if (pid < 0) {
    close_quietly(out_pipe[0]);
    close_quietly(err_pipe[0]);
    BERTH_FAIL("cannot start a worker (fork failed): ", std::strerror(saved),
               ". Fix: check the process limit (ulimit -u) and free memory, or start fewer workers.");
  }
  // Also from the parent, so the group exists before any signal is sent to it (whichever runs first wins).
  ::setpgid(pid, pid);
  return SpawnedProcess{pid, out_pipe[0], err_pipe[0]};
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + signal_name(WTERMSIG(status));
  return "stopped (status " + std::to_string(status) + ")";
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

}  // namespace berth::launch::detail
