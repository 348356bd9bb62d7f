// WorkerGroup: torchrun's per-worker environment, polled pipes split into prefixed lines, bounded stopping.
#include "launch/worker_group.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ostream>
#include <sstream>
#include <utility>

namespace berth::launch::detail {

std::string format_seconds(double s) {
  std::ostringstream text;
  text << s << " s";
  return text.str();
}

std::string stopped_workers_text(const std::vector<Worker>& workers) {
  std::string text;
  for (const Worker& w : workers)
    if (w.running && w.stopped)
      text += "; rank " + std::to_string(w.rank) + " (pid " + std::to_string(w.pid) +
              ") was stopped: unresponsive";
  return text;
}

WorkerGroup::~WorkerGroup() {
  for (Worker& w : workers_) {
    if (w.running) {
      ::kill(-w.pid, SIGKILL);
      ::waitpid(w.pid, &w.status, 0);
    }
    close_stream(w, w.out);
    close_stream(w, w.err);
  }
}

Environment WorkerGroup::worker_environment(const Environment& base_env, const Worker& w, int port,
                                            int restart_count) const {
  const int nproc = options_.nproc_per_node;
  Environment env = base_env;
  auto set = [&env](const std::string& name, const std::string& value) { env[name] = value; };
  set("RANK", std::to_string(w.rank));
  set("LOCAL_RANK", std::to_string(w.local_rank));
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
  if (!options_.devices.empty()) set("BERTH_DEVICE", options_.devices[static_cast<size_t>(w.local_rank)]);
  for (const auto& [name, value] : options_.extra_env) set(name, value);
  return env;
}

void WorkerGroup::start(const std::string& path, const std::vector<std::string>& command,
                        const Environment& base_env, int port, int restart_count) {
  const int nproc = options_.nproc_per_node;
  for (int local = 0; local < nproc; ++local) {
    Worker w;
    w.local_rank = local;
    w.rank = options_.node_rank * nproc + local;
    const SpawnedProcess p =
        spawn_process(path, command, worker_environment(base_env, w, port, restart_count));
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

bool WorkerGroup::any_running() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.running; });
}

bool WorkerGroup::any_open() const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [](const Worker& w) { return w.out.fd >= 0 || w.err.fd >= 0; });
}

std::vector<size_t> WorkerGroup::pump(int timeout_ms) {
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
    const pid_t r = ::waitpid(w.pid, &status, WNOHANG | WUNTRACED | WCONTINUED);
    if (r == w.pid && note_stop_or_continue(w, status)) continue;
    if (r == w.pid || (r < 0 && errno == ECHILD)) {
      w.running = false;
      w.status = r == w.pid ? status : 0;
      exited.push_back(i);
    }
  }
  return exited;
}

bool WorkerGroup::note_stop_or_continue(Worker& w, int status) {
  if (WIFSTOPPED(status)) {
    w.stopped = true;
    err_ << "berth launch: rank " << w.rank << " (pid " << w.pid << ") was stopped by "
         << signal_name(WSTOPSIG(status))
         << ": it is unresponsive, and the other ranks wait for it in their next collective until "
            "BERTH_HEARTBEAT_TIMEOUT (20 s by default). Fix: kill -CONT "
         << w.pid << " to resume it\n";
    err_.flush();
    return true;
  }
  if (WIFCONTINUED(status)) {
    w.stopped = false;
    err_ << "berth launch: rank " << w.rank << " (pid " << w.pid << ") continued\n";
    return true;
  }
  return false;
}

void WorkerGroup::drain(double seconds) {
  const Clock::time_point deadline = Clock::now() + to_duration(seconds);
  while (any_open() && Clock::now() < deadline) pump(remaining_ms(deadline, 50));
  for (Worker& w : workers_) {
    close_stream(w, w.out);
    close_stream(w, w.err);
  }
  out_.flush();
  err_.flush();
}

void WorkerGroup::stop(int first_signal) {
  for (Worker& w : workers_) {
    if (!w.running) continue;
    ::kill(-w.pid, first_signal);
    if (w.stopped) ::kill(-w.pid, SIGCONT);  // a stopped process acts on the signal only once continued
  }
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

void WorkerGroup::print_tail(const Worker& w) {
  if (w.tail.empty()) {
    err_ << "berth launch: rank " << w.rank << " printed nothing\n";
    return;
  }
  err_ << "berth launch: last " << w.tail.size() << " line" << (w.tail.size() == 1 ? "" : "s") << " of rank "
       << w.rank << ":\n";
  for (const std::string& line : w.tail) err_ << "  " << line << "\n";
}

WorkerGroup::Clock::duration WorkerGroup::to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, seconds)));
}

int WorkerGroup::remaining_ms(Clock::time_point deadline, int cap) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, cap));
}

std::string WorkerGroup::device_label(int local) const {
  if (!options_.devices.empty()) return options_.devices[static_cast<size_t>(local)];
  if (options_.default_device == "cuda") return "cuda:" + std::to_string(local);
  return options_.default_device.empty() ? "cpu" : options_.default_device;
}

void WorkerGroup::read_stream(Worker& w, Stream& s) {
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

void WorkerGroup::close_stream(Worker& w, Stream& s) {
  if (s.fd < 0) return;
  if (!s.partial.empty()) emit(w, s, s.partial);
  s.partial.clear();
  ::close(s.fd);
  s.fd = -1;
}

void WorkerGroup::emit(Worker& w, const Stream& s, std::string_view line) {
  std::string prefixed = "[rank" + std::to_string(w.rank) + "]: ";
  prefixed.append(line);
  (s.is_stderr ? err_ : out_) << prefixed << "\n";
  w.tail.push_back(std::move(prefixed));
  while (static_cast<int>(w.tail.size()) > std::max(0, options_.tail_lines)) w.tail.pop_front();
}

}  // namespace berth::launch::detail
