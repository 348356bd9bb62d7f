// This process's place in a run: which rank it is, the device it is bound to and its process group. Built
// once, before any model or tensor.
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <memory>
#include <string>

#include "berth/device/dist_env.h"
#include "berth/dist/communicator.h"

namespace berth::dist {

// What a process asks of its run (TrainingArguments' device, ddp_backend, rendezvous and ddp_timeout).
struct ProcessOptions {
  std::string device = "auto";         // auto|cpu|cuda|cuda:N|meta
  std::string backend = "auto";        // auto (nccl for CUDA devices, else gloo), gloo, nccl, mpi
  std::string rendezvous = "env";      // env (MASTER_ADDR/PORT), file://PATH or tcp://HOST:PORT
  std::chrono::seconds timeout{1800};  // how long any collective may take before failing
};

struct ProcessContext {
  DistEnv env;
  c10::Device device{c10::kCPU};
  std::shared_ptr<Communicator> comm;

  bool is_main() const { return env.rank == 0; }
};

// Detects the launcher's variables (torchrun, `berth launch`, mpirun, srun), picks this rank's device from
// options.device and LOCAL_RANK (cuda:LOCAL_RANK by default; several ranks on one GPU only with
// BERTH_ALLOW_SHARED_DEVICE=1), makes it the current device before anything is built and joins the process
// group (BERTH_DIST_TIMEOUT overrides the timeout and BERTH_RENDEZVOUS_TIMEOUT sets how long rank 0 waits for
// every rank, in seconds). One process: a local communicator.
ProcessContext init_process_context(const ProcessOptions& options, const EnvLookup& env = process_env());

// Makes `device` the current one of its type (CUDA's current device), so that a library allocating on
// "cuda" without an index lands on this rank's GPU. CPU: nothing to do.
void bind_device(const c10::Device& device);

}  // namespace berth::dist
