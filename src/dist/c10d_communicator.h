// The Communicator over a c10d process group (Gloo, NCCL or MPI) whose failures name the operation, the
// ranks and the fix (private to src/dist).
#pragma once

#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <memory>
#include <string>

#include "berth/core/compat.h"
#include "berth/dist/communicator.h"
#include "dist/collective_failure.h"

namespace c10d {
class Store;
}

namespace berth::dist {

// `group`: the connected process group; `store`: the rendezvous store its heartbeat beats in (world > 1);
// `who[r]`: rank r's host and pid as the rendezvous recorded them, for failure messages.
std::shared_ptr<Communicator> make_c10d_communicator(c10::intrusive_ptr<compat::C10dBackend> group,
                                                     c10::intrusive_ptr<c10d::Store> store, int rank,
                                                     int world, std::string backend, c10::Device device,
                                                     FailureTimes times, std::vector<std::string> who = {});

}  // namespace berth::dist
