// CollectiveFailure: how a failed c10d collective becomes a berth::Error that every rank's log shows alike:
// the operation, the rank, whether it timed out or lost a peer, and (several ranks) which rank died
// (private to src/dist).
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>

#include "dist/heartbeat.h"

namespace c10d {
class Store;
}

namespace berth::dist {

// What a failed collective was, for the message.
struct FailureContext {
  std::string what;
  int rank;
  int world;
  std::string backend;
  std::chrono::milliseconds timeout;
};

// One communicator's failure context and heartbeat, shared with the work it has in flight.
class CollectiveFailure {
 public:
  // Several ranks: a heartbeat starts in `store`.
  CollectiveFailure(FailureContext ctx, c10::intrusive_ptr<c10d::Store> store);
  const FailureContext& context() const { return ctx_; }
  // Throws the berth::Error for operation `what`, which failed with `e`.
  [[noreturn]] void fail(const std::string& what, const std::exception& e) const;

 private:
  FailureContext ctx_;
  std::unique_ptr<Heartbeat> heartbeat_;
};

}  // namespace berth::dist
