// This process's place in a run: which rank it is, the device it is bound to, its process group and the
// gradient synchronisation the Trainer will use. Built once, before any model or tensor.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "berth/device/dist_env.h"
#include "berth/dist/communicator.h"
#include "berth/dist/zero_options.h"
#include "berth/train/gradient_sync.h"
#include "berth/train/training_arguments.h"

namespace berth::dist {

struct ProcessContext {
  DistEnv env;
  c10::Device device{c10::kCPU};
  std::shared_ptr<Communicator> comm;
  std::shared_ptr<train::GradientSync> gradient_sync;
  ZeroOptions zero;  // what args.deepspeed / args.fsdp ask for (stage 0: none)

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

// The ZeRO options the arguments ask for: args.deepspeed's zero_optimization block (resolved against args
// for `world_size` ranks, so a conflicting config throws here), args.fsdp mapped as HF maps it, else stage 0.
ZeroOptions zero_options_for(const train::TrainingArguments& args, int64_t world_size = 1);
// One line for the console: "zero-2 (overlap_comm, offload_optimizer cpu)"; "" for stage 0.
std::string describe_zero(const ZeroOptions& zero);
// The gradient sync the arguments ask for over `comm`: ZeRO (any world size, offload alone makes sense on
// one), DDP for several ranks, else none (one process).
std::shared_ptr<train::GradientSync> make_gradient_sync(const train::TrainingArguments& args,
                                                        std::shared_ptr<Communicator> comm);

// Makes `device` the current one of its type (CUDA's current device), so that a library allocating on
// "cuda" without an index lands on this rank's GPU. CPU: nothing to do.
void bind_device(const c10::Device& device);

}  // namespace berth::dist
