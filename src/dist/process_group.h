// ProcessGroup: which c10d backend a run gets (Gloo, NCCL or MPI, as this build has them) and its
// construction over a rendezvous store, with errors that say how to get a missing one (private to
// src/dist).
#pragma once

#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>

#include <optional>
#include <string>

#include "berth/core/compat.h"
#include "berth/dist/communicator.h"

namespace c10d {
class Store;
}

namespace berth::dist {

// The backend `requested` ("auto", "gloo", "nccl", "mpi", any case) names for `device`; berth::Error when
// this build lacks it or the device cannot run it.
std::string resolve_backend(const std::string& requested, c10::Device device);

// A connected `backend` process group of `world` ranks over `store`. `where` names the rendezvous and
// `master_addr` (when known) picks Gloo's transport address, for errors and CommOptions::local_addr's
// default.
c10::intrusive_ptr<compat::C10dBackend> make_process_group(const std::string& backend,
                                                           c10::intrusive_ptr<c10d::Store> store, int rank,
                                                           int world, const CommOptions& options,
                                                           const std::string& where,
                                                           const std::optional<std::string>& master_addr);

}  // namespace berth::dist
