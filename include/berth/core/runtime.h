// Process-wide runtime settings: intra-op and BLAS threads, and OpenMP's wait policy.
#pragma once

#include <optional>
#include <string>

namespace berth::runtime {

struct ThreadOptions {
  // Intra-op threads; 0 = OMP_NUM_THREADS when set, else automatic: every available CPU when OpenMP
  // waits passively (openmp_spin_count() == 0), 1 while it spins (more would fight BLAS's threads).
  int threads = 0;
};

struct ThreadState {
  int cpus_available = 1;  // sched_getaffinity: what the OS lets this process use
  int intra_op_threads = 1;
  int interop_threads = 1;
  std::optional<int> blas_threads;
  std::optional<std::string> omp_num_threads;  // the environment, as given
  std::optional<std::string> omp_wait_policy;
  std::optional<unsigned long long> omp_spin_count;  // openmp_spin_count()
};

// CPUs in this process's affinity mask (cgroup/taskset aware), at least 1.
int available_cpus();

// Applies berth's measured defaults (docs/threading.md) to libtorch's intra-op pool and to BLAS's own
// pool. BLAS gets at least every available CPU unless threads is given explicitly: matmuls are where the
// time goes, and with a passive OpenMP wait only one of the two pools is busy at a time.
// threads < 0 throws berth::Error. Returns the resulting state.
ThreadState configure_threads(const ThreadOptions& options = {});

ThreadState thread_state();

// How long an idle OpenMP thread spins before it sleeps, as libgomp itself applied it at start-up (0 with
// OMP_WAIT_POLICY=PASSIVE). This is the effective value, not the environment's: a policy set after the
// process started shows here as still spinning. nullopt when the OpenMP runtime is not libgomp.
// libgomp only prints it (omp_display_env), so stderr is pointed at a temporary file for the call; a libgomp
// without that call (the torch wheel's) gets libgomp's own rule applied to the start-up environment. Call it
// at start-up or from doctor, not while other threads write to stderr.
std::optional<unsigned long long> openmp_spin_count();

}  // namespace berth::runtime
