// `berth launch`: starts one node's workers with torchrun's environment, prefixes their output, stops the
// group when one fails and restarts it a bounded number of times.
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace berth::launch {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port on this host when nnodes == 1, else 29500
  int max_restarts = 0;
  double stop_grace_s = 5;  // SIGTERM, then SIGKILL after this long
  std::string local_addr;   // exported as BERTH_LOCAL_ADDR when set (the interface this node talks on)
  std::vector<std::string> devices;  // per local rank, exported as BERTH_DEVICE; empty: workers choose
  // Shown in the per-worker line when `devices` is empty: "cpu", or "cuda" (shown as cuda:<local rank>).
  std::string default_device = "cpu";
  int tail_lines = 20;  // output lines kept per rank for the failure message
  // Set in every worker's environment after torchrun's variables (tests use it; so may a wrapper).
  std::vector<std::pair<std::string, std::string>> extra_env;
};

// Throws berth::Error naming the field, its value and the fix: nproc < 1, nnodes < 1, node_rank outside
// 0..nnodes-1, ports outside 1..65535, negative restarts or grace, a device count that is not nproc, an empty
// command or one not found on PATH.
void validate(const LaunchOptions& options, const std::vector<std::string>& command);

// Runs `command` as nproc_per_node workers (ranks node_rank*nproc .. +nproc-1) and waits for them. Worker
// stdout lines go to `out` and stderr lines to `err`, each prefixed "[rankR]: "; the launcher's own lines
// ("berth launch: ...") go to `out` (one per started worker) and `err` (notes, failures). SIGINT and SIGTERM
// received meanwhile are forwarded to every worker. Returns 0 when every worker exits 0; otherwise (after
// max_restarts restarts) the first failed worker's exit code, 128+signal when it was killed, or 128+signal
// of what the launcher itself received. One launch at a time per process is the intended use; concurrent
// calls work but all of them see a forwarded signal. Validates first (see validate).
int launch(const LaunchOptions& options, const std::vector<std::string>& command, std::ostream& out,
           std::ostream& err);

// A TCP port nobody listens on now (bound to port 0 on every interface, read back, released); rank 0's store
// takes it a moment later, so a race with another process is possible but unlikely.
int free_port();

// "SIGKILL", "SIGSEGV", ...; "signal 42" for ones without a common name.
std::string signal_name(int signal);

// "auto" -> visible CUDA devices, or 1 without CUDA; "N" -> N. Throws berth::Error naming `flag` otherwise.
int parse_nproc(const std::string& text, const std::string& flag = "--nproc-per-node");

}  // namespace berth::launch
