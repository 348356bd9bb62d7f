// Runs one node's worker group: validation, the attempts with their bounded restarts, signal forwarding and
// the failure report; and the launcher's small helpers (free ports, signal names, worker counts).
#include "berth/launch/launcher.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ostream>

#include "berth/core/error.h"
#include "berth/device/device.h"
#include "core/text.h"
#include "launch/signal_watch.h"
#include "launch/worker_group.h"
#include "launch/worker_process.h"

namespace berth::launch {
namespace {

using detail::format_seconds;
using detail::SignalWatch;
using detail::Worker;
using detail::WorkerGroup;

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
  WorkerGroup group(options, out, err);
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
      if (!detail::failed(w.status)) continue;
      const int status = w.status;
      const pid_t pid = w.pid;
      const int rank = w.rank;
      const std::string unresponsive = detail::stopped_workers_text(group.workers());
      err << "berth launch: rank " << rank << " (local " << w.local_rank << ", pid " << pid
          << ") failed: " << detail::describe_status(status)
          << "; stopping the other workers (SIGTERM, SIGKILL after " << format_seconds(options.stop_grace_s)
          << ")\n";
      err.flush();
      group.stop(SIGTERM);
      group.print_tail(group.workers()[i]);
      result.exit_code = detail::exit_code_of(status);
      result.failure = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ") failed with " +
                       detail::describe_status(status) + unresponsive;
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
  // glibc's abbreviation ("KILL", "STOP", ...) for every signal it knows.
  if (const char* name = ::sigabbrev_np(signal); name != nullptr) return std::string("SIG") + name;
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
      std::isfinite(o.stop_grace_s) && o.stop_grace_s >= 0, "--stop-grace ", o.stop_grace_s,
      " is not a number of seconds >= 0: it is the time between SIGTERM and SIGKILL. Fix: pass 0 or more "
      "(default 5).");
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
