// Runs one node's worker group: torchrun's environment, prefixed output, signal forwarding, stopping the
// group when a worker fails, bounded restarts.
#include "berth/launch/launcher.h"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <ostream>
#include <sstream>

#include "berth/core/error.h"
#include "berth/device/device.h"
#include "core/text.h"
#include "launch/worker_process.h"

namespace berth::launch {
namespace {

using Clock = std::chrono::steady_clock;

// A signal handler may only touch lock-free atomics; every launch compares the count with its own start.
std::atomic<int> g_signal_count{0};
std::atomic<int> g_last_signal{0};
std::mutex g_handler_mutex;
int g_handler_users = 0;
struct sigaction g_old_int {};
struct sigaction g_old_term {};

void on_signal(int sig) {
  g_last_signal.store(sig);
  g_signal_count.fetch_add(1);
}

// Catches SIGINT and SIGTERM while at least one launch runs, then restores what was there before.
class SignalWatch {
 public:
  SignalWatch() {
    std::lock_guard<std::mutex> lock(g_handler_mutex);
    if (g_handler_users++ == 0) {
      struct sigaction sa {};
      sa.sa_handler = &on_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      ::sigaction(SIGINT, &sa, &g_old_int);
      ::sigaction(SIGTERM, &sa, &g_old_term);
    }
    start_ = g_signal_count.load();
  }
  ~SignalWatch() {
    std::lock_guard<std::mutex> lock(g_handler_mutex);
    if (--g_handler_users == 0) {
      ::sigaction(SIGINT, &g_old_int, nullptr);
      ::sigaction(SIGTERM, &g_old_term, nullptr);
    }
  }
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  // The signal received since this watch began; 0 when none.
  int received() const { return g_signal_count.load() != start_ ? g_last_signal.load() : 0; }

 private:
  int start_ = 0;
};

// One of a worker's output pipes and the line it has not finished yet.
struct Stream {
  int fd = -1;
  bool is_stderr = false;
  std::string partial;
};

struct Worker {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // waitpid's, once exited
  Stream out;
  Stream err;
  std::deque<std::string> tail;  // last lines of both streams, prefixed
};

// waitpid status -> "exit status 3" / "signal SIGKILL".
std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + signal_name(WTERMSIG(status));
  return "stopped (status " + std::to_string(status) + ")";
}

// The exit code a shell would report for the same status.
int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

std::string format_seconds(double s) {
  std::ostringstream text;
  text << s << " s";
  return text.str();
}

// One attempt's workers: started together, read together, stopped together.
class Group {
 public:
  Group(const LaunchOptions& options, std::ostream& out, std::ostream& err)
      : options_(options), out_(out), err_(err) {}
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  ~Group() {
    // Only reached with workers still running when something threw: leave no orphans behind.
    for (Worker& w : workers_) {
      if (w.running) {
        ::kill(-w.pid, SIGKILL);
        ::waitpid(w.pid, &w.status, 0);
      }
      close_stream(w, w.out);
      close_stream(w, w.err);
    }
  }

  void start(const std::string& path, const std::vector<std::string>& command,
             const detail::Environment& base_env, int port, int restart_count) {
    const int nproc = options_.nproc_per_node;
    for (int local = 0; local < nproc; ++local) {
      Worker w;
      w.local_rank = local;
      w.rank = options_.node_rank * nproc + local;
      detail::Environment env = base_env;
      auto set = [&env](const std::string& name, const std::string& value) { env[name] = value; };
      set("RANK", std::to_string(w.rank));
      set("LOCAL_RANK", std::to_string(local));
      set("WORLD_SIZE", std::to_string(options_.nnodes * nproc));
      set("LOCAL_WORLD_SIZE", std::to_string(nproc));
      set("GROUP_RANK", std::to_string(options_.node_rank));
      set("GROUP_WORLD_SIZE", std::to_string(options_.nnodes));
      set("ROLE_RANK", std::to_string(w.rank));
      set("ROLE_WORLD_SIZE", std::to_string(options_.nnodes * nproc));
      set("ROLE_NAME", "default");
      set("MASTER_ADDR", options_.master_addr);
      set("MASTER_PORT", std::to_string(port));
      set("TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count));
      set("TORCHELASTIC_MAX_RESTARTS", std::to_string(options_.max_restarts));
      set("BERTH_RESTART_COUNT", std::to_string(restart_count));
      if (nproc > 1 && env.count("OMP_NUM_THREADS") == 0) set("OMP_NUM_THREADS", "1");
      // Must be there before the worker starts: libgomp reads it once, in its constructor.
      if (env.count("OMP_WAIT_POLICY") == 0) set("OMP_WAIT_POLICY", "PASSIVE");
      if (!options_.local_addr.empty()) set("BERTH_LOCAL_ADDR", options_.local_addr);
      if (!options_.devices.empty()) set("BERTH_DEVICE", options_.devices[static_cast<size_t>(local)]);
      for (const auto& [name, value] : options_.extra_env) set(name, value);

      const detail::SpawnedProcess p = detail::spawn_process(path, command, env);
      w.pid = p.pid;
      w.running = true;
      w.out = Stream{p.stdout_fd, false, {}};
      w.err = Stream{p.stderr_fd, true, {}};
      workers_.push_back(std::move(w));
      const Worker& started = workers_.back();
      out_ << "berth launch: rank " << started.rank << " (local " << local << ") pid " << started.pid
           << " device " << device_label(local) << "\n";
    }
    out_.flush();
  }

  std::vector<Worker>& workers() { return workers_; }

  bool any_running() const {
    return std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.running; });
  }

  bool any_open() const {
    return std::any_of(workers_.begin(), workers_.end(),
                       [](const Worker& w) { return w.out.fd >= 0 || w.err.fd >= 0; });
  }

  // Reads what the pipes have (waiting at most timeout_ms for something), then reaps exited workers.
  // Returns the indices of workers that exited during this call.
  std::vector<size_t> pump(int timeout_ms) {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, Stream*>> owners;
    for (size_t i = 0; i < workers_.size(); ++i) {
      for (Stream* s : {&workers_[i].out, &workers_[i].err}) {
        if (s->fd < 0) continue;
        fds.push_back(pollfd{s->fd, POLLIN, 0});
        owners.emplace_back(i, s);
      }
    }
    const int ready = ::poll(fds.data(), fds.size(), std::max(0, timeout_ms));
    if (ready > 0) {
      for (size_t k = 0; k < fds.size(); ++k) {
        if (fds[k].revents == 0) continue;
        read_stream(workers_[owners[k].first], *owners[k].second);
      }
      out_.flush();
      err_.flush();
    }
    std::vector<size_t> exited;
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      if (!w.running) continue;
      int status = 0;
      const pid_t r = ::waitpid(w.pid, &status, WNOHANG);
      if (r == w.pid || (r < 0 && errno == ECHILD)) {
        w.running = false;
        w.status = r == w.pid ? status : 0;
        exited.push_back(i);
      }
    }
    return exited;
  }

  // Reads the remaining output for up to `seconds`: a worker's own children may hold its pipes a while.
  void drain(double seconds) {
    const Clock::time_point deadline = Clock::now() + to_duration(seconds);
    while (any_open() && Clock::now() < deadline) pump(remaining_ms(deadline, 50));
    for (Worker& w : workers_) {
      close_stream(w, w.out);
      close_stream(w, w.err);
    }
    out_.flush();
    err_.flush();
  }

  // Sends `first_signal` to every running worker's process group, SIGKILL to what is left after the grace
  // period, and reaps them. Bounded: a process SIGKILL cannot end (stuck in the kernel) is reported, not
  // waited for.
  void stop(int first_signal) {
    for (Worker& w : workers_)
      if (w.running) ::kill(-w.pid, first_signal);
    const Clock::time_point grace_end = Clock::now() + to_duration(options_.stop_grace_s);
    while (any_running() && Clock::now() < grace_end) pump(remaining_ms(grace_end, 50));
    if (any_running()) {
      for (Worker& w : workers_) {
        if (!w.running) continue;
        err_ << "berth launch: rank " << w.rank << " (pid " << w.pid << ") still running "
             << format_seconds(options_.stop_grace_s) << " after " << signal_name(first_signal)
             << "; sending SIGKILL\n";
        ::kill(-w.pid, SIGKILL);
      }
      const Clock::time_point kill_end = Clock::now() + std::chrono::seconds(5);
      while (any_running() && Clock::now() < kill_end) pump(remaining_ms(kill_end, 50));
      for (Worker& w : workers_) {
        if (!w.running) continue;
        err_ << "berth launch: rank " << w.rank << " (pid " << w.pid
             << ") did not end 5 s after SIGKILL (stuck in the kernel?); leaving it\n";
        w.running = false;  // the destructor must not wait for it either
        w.status = SIGKILL;
      }
    }
    // Whatever a worker started and left behind in its group (a shell's background jobs) goes too.
    for (Worker& w : workers_) ::kill(-w.pid, SIGKILL);
    drain(1.0);
  }

  // The failed worker's last lines, for the failure message.
  void print_tail(const Worker& w) {
    if (w.tail.empty()) {
      err_ << "berth launch: rank " << w.rank << " printed nothing\n";
      return;
    }
    err_ << "berth launch: last " << w.tail.size() << " line" << (w.tail.size() == 1 ? "" : "s")
         << " of rank " << w.rank << ":\n";
    for (const std::string& line : w.tail) err_ << "  " << line << "\n";
  }

 private:
  static Clock::duration to_duration(double seconds) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, seconds)));
  }

  static int remaining_ms(Clock::time_point deadline, int cap) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, cap));
  }

  std::string device_label(int local) const {
    if (!options_.devices.empty()) return options_.devices[static_cast<size_t>(local)];
    if (options_.default_device == "cuda") return "cuda:" + std::to_string(local);
    return options_.default_device.empty() ? "cpu" : options_.default_device;
  }

  void read_stream(Worker& w, Stream& s) {
    char buffer[65536];
    const ssize_t n = ::read(s.fd, buffer, sizeof(buffer));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
      close_stream(w, s);
      return;
    }
    s.partial.append(buffer, static_cast<size_t>(n));
    size_t begin = 0;
    for (size_t nl = s.partial.find('\n'); nl != std::string::npos; nl = s.partial.find('\n', begin)) {
      emit(w, s, std::string_view(s.partial).substr(begin, nl - begin));
      begin = nl + 1;
    }
    s.partial.erase(0, begin);
    // A worker printing without newlines (a progress bar with \r) must not grow this without bound.
    if (s.partial.size() > 65536) {
      emit(w, s, s.partial);
      s.partial.clear();
    }
  }

  void close_stream(Worker& w, Stream& s) {
    if (s.fd < 0) return;
    if (!s.partial.empty()) emit(w, s, s.partial);
    s.partial.clear();
    ::close(s.fd);
    s.fd = -1;
  }

  void emit(Worker& w, const Stream& s, std::string_view line) {
    std::string prefixed = "[rank" + std::to_string(w.rank) + "]: ";
    prefixed.append(line);
    (s.is_stderr ? err_ : out_) << prefixed << "\n";
    w.tail.push_back(std::move(prefixed));
    while (static_cast<int>(w.tail.size()) > std::max(0, options_.tail_lines)) w.tail.pop_front();
  }

  const LaunchOptions& options_;
  std::ostream& out_;
  std::ostream& err_;
  std::vector<Worker> workers_;
};

struct AttemptResult {
  bool ok = false;
  int exit_code = 0;
  int launcher_signal = 0;  // the signal the launcher received, when that ended the attempt
  std::string failure;      // "rank 1 (local 1, pid 42): exit status 3"
};

AttemptResult run_attempt(const LaunchOptions& options, const std::string& path,
                          const std::vector<std::string>& command, const detail::Environment& base_env,
                          int port, int restart_count, const SignalWatch& signals, std::ostream& out,
                          std::ostream& err) {
  Group group(options, out, err);
  AttemptResult result;
  if (const int sig = signals.received()) {
    result.launcher_signal = sig;
    result.exit_code = 128 + sig;
    return result;
  }
  group.start(path, command, base_env, port, restart_count);
  for (;;) {
    const std::vector<size_t> exited = group.pump(50);
    if (const int sig = signals.received()) {
      err << "berth launch: received " << signal_name(sig) << "; forwarding it to the workers\n";
      err.flush();
      group.stop(sig);
      result.launcher_signal = sig;
      result.exit_code = 128 + sig;
      return result;
    }
    for (size_t i : exited) {
      const Worker& w = group.workers()[i];
      if (!failed(w.status)) continue;
      const int status = w.status;
      const pid_t pid = w.pid;
      const int rank = w.rank;
      err << "berth launch: rank " << rank << " (local " << w.local_rank << ", pid " << pid
          << ") failed: " << describe_status(status)
          << "; stopping the other workers (SIGTERM, SIGKILL after " << format_seconds(options.stop_grace_s)
          << ")\n";
      err.flush();
      group.stop(SIGTERM);
      group.print_tail(group.workers()[i]);
      result.exit_code = exit_code_of(status);
      result.failure = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ") failed with " +
                       describe_status(status);
      return result;
    }
    if (!group.any_running()) {
      group.drain(2.0);
      result.ok = true;
      return result;
    }
  }
}

}  // namespace

std::string signal_name(int signal) {
  switch (signal) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGCHLD:
      return "SIGCHLD";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGXFSZ:
      return "SIGXFSZ";
    case SIGSYS:
      return "SIGSYS";
  }
  return "signal " + std::to_string(signal);
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  BERTH_CHECK(fd >= 0, "cannot open a socket to find a free port: ", std::strerror(errno),
              ". Fix: pass --master-port explicitly.");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int saved = errno;
  ::close(fd);
  BERTH_CHECK(ok, "cannot find a free TCP port: ", std::strerror(saved),
              ". Fix: pass --master-port explicitly.");
  return ntohs(addr.sin_port);
}

void validate(const LaunchOptions& o, const std::vector<std::string>& command) {
  BERTH_CHECK(o.nproc_per_node >= 1, "--nproc-per-node ", o.nproc_per_node,
              " starts no worker: it must be at least 1. Fix: pass --nproc-per-node 1 or more (or auto).");
  BERTH_CHECK(o.nnodes >= 1, "--nnodes ", o.nnodes, " is not a node count: it must be at least 1. Fix: pass ",
              "--nnodes 1 for one machine, or the number of machines that each run berth launch.");
  BERTH_CHECK(o.node_rank >= 0 && o.node_rank < o.nnodes, "--node-rank ", o.node_rank, " with --nnodes ",
              o.nnodes, ": node ranks run from 0 to ", o.nnodes - 1, ". Fix: pass --node-rank 0..",
              o.nnodes - 1, " (a different one on each machine), or raise --nnodes.");
  BERTH_CHECK(o.master_port >= 0 && o.master_port <= 65535, "--master-port ", o.master_port,
              " is not a TCP port. Fix: pass a port from 1 to 65535 (e.g. 29500), or 0 for a free one.");
  BERTH_CHECK(!o.master_addr.empty(), "--master-addr is empty: workers need the host of rank 0. Fix: pass ",
              "--master-addr HOST (127.0.0.1 on one machine).");
  BERTH_CHECK(o.max_restarts >= 0, "--max-restarts ", o.max_restarts,
              " is negative. Fix: pass 0 (fail on the first error) or the number of restarts to allow.");
  BERTH_CHECK(
      o.stop_grace_s >= 0, "--stop-grace ", o.stop_grace_s,
      " is negative: it is the seconds between SIGTERM and SIGKILL. Fix: pass 0 or more (default 5).");
  BERTH_CHECK(o.devices.empty() || static_cast<int>(o.devices.size()) == o.nproc_per_node, "--device lists ",
              o.devices.size(), " device", o.devices.size() == 1 ? "" : "s", " but --nproc-per-node is ",
              o.nproc_per_node, ": each local worker takes one device. Fix: list ", o.nproc_per_node,
              " devices, or drop --nproc-per-node to start one worker per listed device.");
  BERTH_CHECK(!command.empty(), "no command to launch. Fix: put it after '--', e.g. berth launch ",
              "--nproc-per-node 2 -- berth train --model-preset bert-tiny ...");
}

int launch(const LaunchOptions& options, const std::vector<std::string>& command, std::ostream& out,
           std::ostream& err) {
  validate(options, command);
  const detail::Environment base_env = detail::current_environment();
  const std::string path = detail::resolve_program(command.front(), base_env);
  int port = options.master_port;
  if (port == 0) port = options.nnodes == 1 ? free_port() : 29500;

  if (options.nproc_per_node > 1 && base_env.count("OMP_NUM_THREADS") == 0) {
    // torchrun's note, word for word: users know it.
    err << "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
           "system being overloaded, please further tune the variable for optimal performance in your "
           "application as needed.\n";
  }
  out << "berth launch: node " << options.node_rank << " of " << options.nnodes << ", "
      << options.nproc_per_node << " worker" << (options.nproc_per_node == 1 ? "" : "s") << ", master "
      << options.master_addr << ":" << port << ": " << berth::text::join(command, " ") << "\n";

  SignalWatch signals;
  const int attempts = options.max_restarts + 1;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) {
      err << "berth launch: restarting the group (attempt " << attempt + 1 << " of " << attempts << ")\n";
      err.flush();
    }
    const AttemptResult r = run_attempt(options, path, command, base_env, port, attempt, signals, out, err);
    if (r.ok) return 0;
    if (r.launcher_signal != 0) {
      err << "berth launch: stopped by " << signal_name(r.launcher_signal) << "; exit code " << r.exit_code
          << "\n";
      err.flush();
      return r.exit_code;
    }
    if (attempt + 1 < attempts) continue;
    err << "berth launch: failed: " << r.failure << (attempts > 1 ? " on the last of " : "")
        << (attempts > 1 ? std::to_string(attempts) + " attempts" : "") << "; exit code " << r.exit_code
        << "\n";
    err.flush();
    return r.exit_code;
  }
  return 1;  // unreachable: the last attempt returns
}

int parse_nproc(const std::string& text, const std::string& flag) {
  const std::string value(berth::text::trim(text));
  if (berth::text::to_lower(value) == "auto") {
    const CudaInfo cuda = query_cuda();
    return cuda.available && cuda.device_count > 0 ? cuda.device_count : 1;
  }
  const std::optional<int> n = berth::text::parse_integer(value);
  BERTH_CHECK(n.has_value(), flag, " '", text, "' is not a number of workers. Fix: pass a whole number ",
              "(1, 2, ...) or auto (one per visible GPU, else 1).");
  BERTH_CHECK(*n >= 1, flag, " ", *n, " starts no worker: it must be at least 1. Fix: pass ", flag,
              " 1 or more (or auto).");
  return *n;
}

}  // namespace berth::launch
