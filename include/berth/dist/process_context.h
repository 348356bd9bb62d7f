// This process's place in a run: which rank it is, the device it is bound to, its process group and the
// gradient synchronisation the Trainer will use. Built once, before any model or tensor.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "berth/device/dist_env.h"
#include "berth/dist/communicator.h"
#include "berth/train/gradient_sync.h"
#include "berth/train/training_arguments.h"

namespace berth::dist {

struct ProcessContext {
  DistEnv env;
  c10::Device device{c10::kCPU};
  std::shared_ptr<Communicator> comm;
  std::shared_ptr<train::GradientSync> gradient_sync;

  bool is_main() const { return env.rank == 0; }
};

// Detects the launcher's variables (torchrun, `berth launch`, mpirun, srun), picks this rank's device from
// args.device and LOCAL_RANK (cuda:LOCAL_RANK by default; several ranks on one GPU only with
// BERTH_ALLOW_SHARED_DEVICE=1), makes it the current device before anything is built, joins the process group
// (args.ddp_backend, args.rendezvous, args.ddp_timeout; BERTH_DIST_TIMEOUT overrides the timeout and
// BERTH_RENDEZVOUS_TIMEOUT sets how long rank 0 waits for every rank, in seconds) and builds
// DDP's gradient sync (args.ddp_bucket_cap_mb, args.ddp_find_unused_parameters). One process: a local
// communicator and the Trainer's default (no) synchronisation.
ProcessContext init_process_context(const train::TrainingArguments& args,
                                    const EnvLookup& env = process_env());

// Makes `device` the current one of its type (CUDA's current device), so that a library allocating on
// "cuda" without an index lands on this rank's GPU. CPU: nothing to do.
void bind_device(const c10::Device& device);

}  // namespace berth::dist
