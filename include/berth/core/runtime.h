// Process-wide runtime settings: intra-op and BLAS threads, and OpenMP's wait policy.
#pragma once

#include <optional>
#include <string>

namespace berth::runtime {

struct ThreadOptions {
  // Intra-op threads; 0 = OMP_NUM_THREADS when set, else automatic: every available CPU when
  // OMP_WAIT_POLICY=PASSIVE, 1 when OpenMP spins (more would fight BLAS's threads for the cores).
  int threads = 0;
};

struct ThreadState {
  int cpus_available = 1;  // sched_getaffinity: what the OS lets this process use
  int intra_op_threads = 1;
  int interop_threads = 1;
  std::optional<int> blas_threads;
  std::optional<std::string> omp_num_threads;  // the environment, as given
  std::optional<std::string> omp_wait_policy;
};

// CPUs in this process's affinity mask (cgroup/taskset aware), at least 1.
int available_cpus();

// Applies berth's measured defaults (docs/threading.md) to libtorch's intra-op pool and to BLAS's own
// pool. BLAS gets at least every available CPU unless threads is given explicitly: matmuls are where the
// time goes, and with a passive OpenMP wait only one of the two pools is busy at a time.
// threads < 0 throws berth::Error. Returns the resulting state.
ThreadState configure_threads(const ThreadOptions& options = {});

ThreadState thread_state();

// libgomp reads OMP_WAIT_POLICY once, when it is loaded, before main runs; its default
// spinning wait steals the cores OpenBLAS's own threads need and halves throughput here.
// When the variable is unset this re-executes the program (once) with OMP_WAIT_POLICY=PASSIVE;
// set it yourself to any value, or set BERTH_NO_REEXEC=1, to keep the process as it is.
// Call it first thing in main. Returns only when no re-exec happened (or it failed).
void ensure_process_environment(int argc, char** argv);

}  // namespace berth::runtime
