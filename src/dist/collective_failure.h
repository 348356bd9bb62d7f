// CollectiveFailure: how a failed c10d collective becomes a berth::Error that every rank's log shows alike:
// the operation, the rank, whether it timed out or lost a peer, and (several ranks) which rank died
// (private to src/dist).
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "dist/heartbeat.h"

namespace c10d {
class Store;
class Work;
}  // namespace c10d

namespace berth::dist {

// How long a collective may take, and how long a peer's heartbeat may stand still while a rank waits (Gloo).
struct FailureTimes {
  std::chrono::milliseconds timeout;
  std::chrono::milliseconds heartbeat;
};

// What a failed collective was, for the message.
struct FailureContext {
  std::string what;
  int rank;
  int world;
  std::string backend;
  FailureTimes times;
  std::vector<std::string>
      who;  // who[r]: rank r's host and pid from the rendezvous, for messages (may be empty)
};

// One communicator's failure context and heartbeat, shared with the work it has in flight.
class CollectiveFailure {
 public:
  // Several ranks: a heartbeat starts in `store`.
  CollectiveFailure(FailureContext ctx, c10::intrusive_ptr<c10d::Store> store);
  const FailureContext& context() const { return ctx_; }
  // Throws the berth::Error for operation `what`, which failed with `e`.
  [[noreturn]] void fail(const std::string& what, const std::exception& e) const;
  // Waits for `work` of operation `what`; a failure throws as fail() does. On Gloo it polls: a peer whose
  // heartbeat stood still for times.heartbeat fails the wait naming it, and the group is abandoned.
  void wait(c10d::Work& work, const std::string& what) const;
  // A wait gave up on a peer that stopped: its process group still has a worker thread blocked on that peer,
  // which destroying the group would join (until the collective timeout), so the group must be left alone.
  bool abandoned() const { return abandoned_; }

 private:
  [[noreturn]] void fail_unresponsive(const std::string& what, const std::vector<int>& ranks) const;
  [[noreturn]] void fail_store_silent(const std::string& what) const;

  FailureContext ctx_;
  std::unique_ptr<Heartbeat> heartbeat_;
  mutable std::atomic<bool> abandoned_{false};
};

}  // namespace berth::dist
