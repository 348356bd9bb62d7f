// ProcessGroup: c10d's Gloo, NCCL and MPI backends, as far as this build of libtorch has them.
#include "dist/process_group.h"

#include <torch/csrc/distributed/c10d/Store.hpp>
#ifdef USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#ifdef USE_C10D_MPI
#include <torch/csrc/distributed/c10d/ProcessGroupMPI.hpp>
#endif
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "berth/core/error.h"
#include "core/text.h"
#include "dist/comm_text.h"

namespace berth::dist {
namespace {

std::string build_backends_text() { return join(available_backends(), ", "); }

std::string how_to_get(const std::string& backend) {
  if (backend == "nccl")
    return "NCCL comes with a CUDA build of libtorch: rebuild berth against one (cmake -DTorch_DIR=<libtorch "
           "with CUDA>/share/cmake/Torch), or use --backend gloo";
  if (backend == "mpi")
    return "c10d's MPI backend exists only in a libtorch built from source with USE_MPI=1 and an MPI "
           "installation; rebuild berth against one, or use --backend gloo";
  return "Gloo comes with libtorch's c10d (Debian: libgloo-dev); reconfigure berth so CMake finds it";
}

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

std::string gloo_local_addr(const CommOptions& options, const std::optional<std::string>& master_addr) {
  if (!options.local_addr.empty()) return options.local_addr;
  const char* env = std::getenv("BERTH_LOCAL_ADDR");
  if (env != nullptr && *env != '\0') return env;
  if (!master_addr || is_loopback(*master_addr)) return "127.0.0.1";
  return "";  // this host's name
}

// The backend's own constructor; nullptr when this build lacks it (resolve_backend refused it already).
c10::intrusive_ptr<compat::C10dBackend> construct(const std::string& backend,
                                                  const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                  int world, const CommOptions& options,
                                                  const std::optional<std::string>& master_addr) {
  c10::intrusive_ptr<compat::C10dBackend> group;
  if (backend == "gloo") {
#ifdef USE_C10D_GLOO
    auto opts = c10d::ProcessGroupGloo::Options::create(options.timeout);
    const std::string addr = gloo_local_addr(options, master_addr);
    try {
      opts->devices.push_back(addr.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                           : c10d::ProcessGroupGloo::createDeviceForHostname(addr));
    } catch (const std::exception& e) {
      BERTH_FAIL("rank ", rank, " could not open a Gloo transport on '", addr.empty() ? this_host() : addr,
                 "': ", message_of(e),
                 ". Fix: set BERTH_LOCAL_ADDR to an address of this host the other ranks can reach.");
    }
    group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, opts);
#endif
  } else if (backend == "nccl") {
#ifdef USE_C10D_NCCL
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = options.timeout;
    group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, opts);
#endif
  } else if (backend == "mpi") {
#ifdef USE_C10D_MPI
    auto mpi = c10d::ProcessGroupMPI::createProcessGroupMPI();
    BERTH_CHECK(mpi->getRank() == rank && mpi->getSize() == world, "MPI says this process is rank ",
                mpi->getRank(), " of ", mpi->getSize(), " but the launcher's environment says rank ", rank,
                " of ", world, ". Fix: start berth with mpirun/srun only, without torchrun variables.");
    group = mpi;
#endif
  }
  return group;
}

}  // namespace

std::vector<std::string> available_backends() {
  std::vector<std::string> out;
#ifdef USE_C10D_GLOO
  out.push_back("gloo");
#endif
#ifdef USE_C10D_NCCL
  out.push_back("nccl");
#endif
#ifdef USE_C10D_MPI
  out.push_back("mpi");
#endif
  out.push_back("local");
  return out;
}

std::string resolve_backend(const std::string& requested, c10::Device device) {
  const std::vector<std::string> have = available_backends();
  auto has = [&](const std::string& b) { return std::find(have.begin(), have.end(), b) != have.end(); };
  std::string backend = text::to_lower(requested);
  if (backend == "auto") {
    backend = device.is_cuda() && has("nccl") ? "nccl" : "gloo";
    BERTH_CHECK(has(backend), "no process-group backend is compiled into this build of berth (it has: ",
                build_backends_text(), "). Fix: ", how_to_get("gloo"), ".");
    return backend;
  }
  BERTH_CHECK(backend == "gloo" || backend == "nccl" || backend == "mpi", "unknown distributed backend '",
              requested, "': expected auto, gloo, nccl or mpi (this build has: ", build_backends_text(),
              ").");
  BERTH_CHECK(has(backend), "distributed backend '", backend,
              "' is not available in this build of berth (torch ", TORCH_VERSION,
              "; it has: ", build_backends_text(), "). Fix: ", how_to_get(backend), ".");
  BERTH_CHECK(backend != "nccl" || device.is_cuda(), "distributed backend 'nccl' needs a CUDA device, found ",
              device, ". Fix: run on GPUs, or use --backend gloo (or auto) on the CPU.");
  return backend;
}

c10::intrusive_ptr<compat::C10dBackend> make_process_group(const std::string& backend,
                                                           c10::intrusive_ptr<c10d::Store> store, int rank,
                                                           int world, const CommOptions& options,
                                                           const std::string& where,
                                                           const std::optional<std::string>& master_addr) {
  c10::intrusive_ptr<compat::C10dBackend> group;
  try {
    group = construct(backend, store, rank, world, options, master_addr);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    BERTH_FAIL(
        "rank ", rank, " of ", world, " could not connect its ", backend, " process group (rendezvous at ",
        where, "): ", message_of(e),
        ". Fix: check that every rank can reach the others (firewall, BERTH_LOCAL_ADDR), and the logs of "
        "the other ranks.");
  }
  BERTH_BUG(group, "backend ", backend, " was resolved but not constructed");
  return group;
}

}  // namespace berth::dist
