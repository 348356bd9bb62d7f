// Thread pools and the OpenMP wait policy: defaults measured on 2-core machines (docs/threading.md).
#include "berth/core/runtime.h"

#include <ATen/Parallel.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "berth/core/blas_info.h"
#include "berth/core/error.h"

namespace berth::runtime {
namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

bool omp_waits_passively() {
  auto policy = env("OMP_WAIT_POLICY");
  return policy && (*policy == "PASSIVE" || *policy == "passive");
}

// Measured (docs/threading.md): with OMP_WAIT_POLICY=PASSIVE, 1 or all intra-op threads are equal within
// noise, but with OpenMP spinning, more than one intra-op thread next to OpenBLAS's threads halves
// throughput. So every CPU only when the wait is passive.
int automatic_threads() { return omp_waits_passively() ? available_cpus() : 1; }

}  // namespace

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

ThreadState configure_threads(const ThreadOptions& options) {
  BERTH_CHECK(options.threads >= 0, "threads must be 0 (automatic) or a positive count, found ",
              options.threads, ". Fix: pass --threads N with N >= 1, or omit it to use every available CPU");
  int threads = options.threads;
  if (threads == 0) {
    auto from_env = env("OMP_NUM_THREADS");
    char* end = nullptr;
    long parsed = from_env ? std::strtol(from_env->c_str(), &end, 10) : 0;
    bool usable = from_env && end != from_env->c_str() && *end == '\0' && parsed > 0;
    threads = usable ? static_cast<int>(parsed) : automatic_threads();
  }
  at::set_num_threads(threads);
  // BLAS gets every CPU whatever the intra-op count: its threads are where the matmul time goes.
  set_blas_threads(options.threads > 0 ? threads : std::max(threads, available_cpus()));
  return thread_state();
}

ThreadState thread_state() {
  ThreadState state;
  state.cpus_available = available_cpus();
  state.intra_op_threads = at::get_num_threads();
  state.interop_threads = at::get_num_interop_threads();
  state.blas_threads = query_blas().num_threads;
  state.omp_num_threads = env("OMP_NUM_THREADS");
  state.omp_wait_policy = env("OMP_WAIT_POLICY");
  return state;
}

void ensure_process_environment(int argc, char** argv) {
  if (env("OMP_WAIT_POLICY") || env("BERTH_NO_REEXEC")) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  setenv("BERTH_NO_REEXEC", "1", 1);  // a second pass must never loop, whatever happens to the first variable
  std::vector<char*> args(argv, argv + argc);
  args.push_back(nullptr);
  execv("/proc/self/exe", args.data());
  // exec failed (no /proc, say): carry on with the spinning default rather than fail the command.
}

}  // namespace berth::runtime
