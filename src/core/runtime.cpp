// Thread pools and the OpenMP wait policy: defaults measured on 2-core machines (docs/threading.md).
#include "berth/core/runtime.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "berth/core/blas_info.h"
#include "berth/core/error.h"
#include "core/text.h"

extern "C" int omp_get_max_threads() __attribute__((weak));

namespace berth::runtime {
namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// Measured (docs/threading.md): with OMP_WAIT_POLICY=PASSIVE, 1 or all intra-op threads are equal within
// noise, but with OpenMP spinning, more than one intra-op thread next to OpenBLAS's threads halves
// throughput. So every CPU only when the wait is passive.
// The effective policy counts, not the environment's: libgomp may have started before it was set.
int automatic_threads() {
  std::optional<unsigned long long> spin = openmp_spin_count();
  return spin && *spin == 0 ? available_cpus() : 1;
}

}  // namespace

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
  state.omp_spin_count = openmp_spin_count();
  return state;
}

namespace {

// One variable of the environment this process was started with (/proc/self/environ): what libgomp's
// constructor read, whatever setenv did since.
std::optional<std::string> startup_env(const std::string& name) {
  std::FILE* file = std::fopen("/proc/self/environ", "rb");
  if (file == nullptr) return std::nullopt;
  std::string entry;
  std::optional<std::string> found;
  for (int c = std::fgetc(file);; c = std::fgetc(file)) {
    if (c == '\0' || c == EOF) {
      if (entry.size() > name.size() && entry.compare(0, name.size() + 1, name + "=") == 0)
        found = entry.substr(name.size() + 1);
      entry.clear();
      if (c == EOF) break;
    } else {
      entry.push_back(static_cast<char>(c));
    }
  }
  std::fclose(file);
  return found;
}

// libgomp's own rule (env.c) for its spin count from the start-up environment, for a libgomp without
// omp_display_env (the copy the torch wheel bundles): GOMP_SPINCOUNT wins, else OMP_WAIT_POLICY
// (PASSIVE 0, ACTIVE 3e10), else 300000.
unsigned long long spin_count_from_startup_env() {
  if (auto count = startup_env("GOMP_SPINCOUNT")) {
    const std::string value = text::to_lower(*count);
    if (value == "infinite" || value == "infinity") return ~0ULL;
    return std::strtoull(count->c_str(), nullptr, 10);
  }
  if (auto policy = startup_env("OMP_WAIT_POLICY")) {
    const std::string value = text::to_lower(*policy);
    if (value == "passive") return 0;
    if (value == "active") return 30000000000ULL;
  }
  return 300000;
}

}  // namespace

std::optional<unsigned long long> openmp_spin_count() {
  // libgomp reports its start-up settings only through omp_display_env, which prints to stderr; point
  // stderr at a temporary file for the call. Looked up at run time: it is OpenMP 5.1's (symbol version
  // OMP_5.1), which the libgomp the torch wheel bundles lacks, and a direct reference from code built with
  // -fopenmp would bind to that version and fail to load there.
  using DisplayEnv = void (*)(int);
  const auto omp_display_env = reinterpret_cast<DisplayEnv>(dlsym(RTLD_DEFAULT, "omp_display_env"));
  if (omp_display_env == nullptr) {
    if (omp_get_max_threads == nullptr) return std::nullopt;
    return spin_count_from_startup_env();
  }
  std::FILE* capture = std::tmpfile();
  if (capture == nullptr) return std::nullopt;
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  dup2(fileno(capture), STDERR_FILENO);
  omp_display_env(1);
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::rewind(capture);
  std::optional<unsigned long long> spin_count;
  char line[512];
  while (std::fgets(line, sizeof(line), capture) != nullptr) {
    unsigned long long value = 0;
    if (std::sscanf(line, " GOMP_SPINCOUNT = '%llu'", &value) == 1) spin_count = value;
  }
  std::fclose(capture);
  return spin_count;
}

}  // namespace berth::runtime
