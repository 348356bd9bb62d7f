// WorkerGroup: one attempt's workers, started together with torchrun's environment, their output read and
// prefixed together, stopped together (private to the library).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "berth/launch/launcher.h"
#include "launch/worker_process.h"

namespace berth::launch::detail {

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
  bool stopped = false;  // by a signal (SIGSTOP, SIGTSTP): alive but unresponsive until continued
  int status = 0;        // waitpid's, once exited
  Stream out;
  Stream err;
  std::deque<std::string> tail;  // last lines of both streams, prefixed
};

// "5 s": the launcher's way of writing a duration.
std::string format_seconds(double s);

// "; rank 1 (pid 42) was stopped (SIGSTOP): unresponsive" for each running worker that is stopped, else "".
std::string stopped_workers_text(const std::vector<Worker>& workers);

class WorkerGroup {
 public:
  WorkerGroup(const LaunchOptions& options, std::ostream& out, std::ostream& err)
      : options_(options), out_(out), err_(err) {}
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;
  // Only has workers still running when something threw: kills them, leaving no orphans behind.
  ~WorkerGroup();

  // Starts nproc_per_node workers running `command` (`path` resolved) with torchrun's variables over
  // `base_env`, printing one "berth launch: rank R ..." line each.
  void start(const std::string& path, const std::vector<std::string>& command, const Environment& base_env,
             int port, int restart_count);

  std::vector<Worker>& workers() { return workers_; }
  bool any_running() const;
  bool any_open() const;

  // Reads what the pipes have (waiting at most timeout_ms for something), then reaps exited workers and
  // notes (and reports) stopped and continued ones. Returns the indices of workers that exited during this
  // call.
  std::vector<size_t> pump(int timeout_ms);

  // Reads the remaining output for up to `seconds`: a worker's own children may hold its pipes a while.
  void drain(double seconds);

  // Sends `first_signal` to every running worker's process group, SIGKILL to what is left after the grace
  // period, and reaps them. Bounded: a process SIGKILL cannot end (stuck in the kernel) is reported, not
  // waited for.
  void stop(int first_signal);

  // The failed worker's last lines, for the failure message.
  void print_tail(const Worker& w);

 private:
  using Clock = std::chrono::steady_clock;

  static Clock::duration to_duration(double seconds);
  static int remaining_ms(Clock::time_point deadline, int cap);
  // Updates `w` from a waitpid status that says it stopped or continued; false for anything else.
  bool note_stop_or_continue(Worker& w, int status);
  Environment worker_environment(const Environment& base_env, const Worker& w, int port,
                                 int restart_count) const;
  std::string device_label(int local) const;
  void read_stream(Worker& w, Stream& s);
  void close_stream(Worker& w, Stream& s);
  void emit(Worker& w, const Stream& s, std::string_view line);

  const LaunchOptions& options_;
  std::ostream& out_;
  std::ostream& err_;
  std::vector<Worker> workers_;
};

}  // namespace berth::launch::detail
