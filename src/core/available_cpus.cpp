// available_cpus: the CPUs this process may run on, torch-free (the tokenizer's batch encoding uses it
// without linking runtime.cpp's thread pools).
#include <sched.h>
#include <unistd.h>

#include "berth/core/runtime.h"

namespace berth::runtime {

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

}  // namespace berth::runtime
