// Communicator: one rank's view of a c10d process group (Gloo, NCCL or MPI), with every failure turned into a
// berth::Error that names the operation and the ranks.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "berth/device/dist_env.h"

namespace c10d {
class Store;
}

namespace berth::dist {

struct CommOptions {
  // "auto" (NCCL for a CUDA device when Torch has it, else Gloo), "gloo", "nccl", "mpi".
  std::string backend = "auto";
  // "env": TCPStore at MASTER_ADDR:MASTER_PORT, hosted by rank 0. "file://PATH": FileStore.
  // "tcp://HOST:PORT".
  std::string rendezvous = "env";
  // How long any collective may take before it fails naming the operation and the ranks.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // How long rank 0 waits for every rank to arrive; a missing rank is named in the error.
  std::chrono::milliseconds rendezvous_timeout{std::chrono::minutes(2)};
  // Address this rank's Gloo transport binds to. "" = 127.0.0.1 when the master address is a loopback
  // address, else this host's name. Env BERTH_LOCAL_ADDR (two "nodes" on 127.0.0.1 / 127.0.0.2 in tests).
  std::string local_addr;
};

// An all-reduce in flight. wait() blocks and rethrows a failure as berth::Error naming the operation.
class PendingWork {
 public:
  virtual ~PendingWork() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string backend_name() const = 0;  // "local", "gloo", "nccl", "mpi"
  // Where this rank's collectives run: the CPU for Gloo and "local", the rank's GPU for NCCL. The double and
  // string helpers build their tensors here.
  virtual c10::Device device() const { return c10::Device(c10::kCPU); }

  // `what` names the operation in errors ("all-reduce of gradient bucket 3", "barrier before saving
  // checkpoint-40").
  virtual void all_reduce_sum(std::vector<at::Tensor>& tensors, const std::string& what) = 0;
  virtual std::unique_ptr<PendingWork> all_reduce_sum_async(std::vector<at::Tensor>& tensors,
                                                            const std::string& what) = 0;
  virtual void broadcast(std::vector<at::Tensor>& tensors, int root, const std::string& what) = 0;
  virtual void barrier(const std::string& what) = 0;
  // Every rank's string, in rank order.
  virtual std::vector<std::string> all_gather_string(const std::string& value, const std::string& what) = 0;
  // root's string on every rank.
  virtual std::string broadcast_string(const std::string& value, int root, const std::string& what) = 0;
  // Sums one contiguous tensor over ranks into root's copy (c10d's reduce); on the other ranks its contents
  // afterwards are unspecified (Gloo uses them as scratch). ZeRO's reduce-scatter is one reduce per owner.
  // Default: an all-reduce, which leaves the sum everywhere.
  virtual std::unique_ptr<PendingWork> reduce_sum_async(at::Tensor& tensor, int root,
                                                        const std::string& what);
  // Every rank's `input` (same numel, dtype and device on every rank) into outputs[r], r = 0..world-1
  // (outputs: world_size tensors of input's numel). Default: one all-reduce of a zero-padded buffer.
  virtual void all_gather(const at::Tensor& input, std::vector<at::Tensor>& outputs, const std::string& what);

  // Convenience: sum of doubles over ranks (eval loss, metric counts).
  double all_reduce_sum(double value, const std::string& what);
  std::vector<double> all_reduce_sum(const std::vector<double>& values, const std::string& what);
};

// One process: every collective is the identity.
std::shared_ptr<Communicator> make_local_communicator();

// From the launcher's environment: rendezvous per options.rendezvous, backend per options.backend and the
// rank's device. env.world_size == 1 -> a local communicator.
std::shared_ptr<Communicator> init_communicator(const DistEnv& env, c10::Device device,
                                                const CommOptions& options = {});

// Over an existing store (tests run ranks as threads over one HashStore/FileStore).
std::shared_ptr<Communicator> make_communicator(c10::intrusive_ptr<c10d::Store> store, int rank,
                                                int world_size, c10::Device device,
                                                const CommOptions& options = {});

// Every rank passes its ordered (key, value) list; all must agree. A mismatch throws on every rank, naming
// `what`, the first differing key, and each rank's value for it (or that the lists differ in length).
void check_agreement(Communicator& comm, const std::vector<std::pair<std::string, std::string>>& items,
                     const std::string& what);

// The backends this build of berth can create, e.g. {"gloo"} or {"gloo", "nccl"} ("local" is always there).
std::vector<std::string> available_backends();

// BERTH_DIST_TIMEOUT: seconds (a positive number, "600" or "2.5") any collective may take; unset -> nullopt.
// Anything else throws berth::Error naming the variable. init_communicator lets it override options.timeout.
std::optional<std::chrono::milliseconds> dist_timeout_from_env(const EnvLookup& env = process_env());

}  // namespace berth::dist
