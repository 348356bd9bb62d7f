// Heartbeat: each rank's counter in the rendezvous store, bumped twice a second, so that after a failed
// collective the ranks whose counters stopped are named as dead, where a timeout alone cannot tell a dead
// rank from one that never came; and a store that stops answering (its host stopped or cut off) is noticed
// instead of waited on (private to src/dist).
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace c10d {
class Store;
}

namespace berth::dist {

class Heartbeat {
 public:
  // Starts beating for `rank` of `world` on a thread of its own; the destructor stops it. `who[r]` describes
  // rank r for messages ("rank 1 (host h at 10.0.0.2, pid 7)"); empty: ranks by number only.
  Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank, int world, std::vector<std::string> who = {});
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // A sentence for the error: which ranks stopped beating, that all others are alive, or that the store does
  // not answer. Watches the counters for a while (1.6 s) first; never blocks on the store for long.
  std::string diagnose() const;

  // The other ranks whose heartbeat has not moved for at least `limit`, as seen across calls (the first call
  // starts every rank's clock). For a rank waiting on a collective: a rank that stopped beating is not
  // running at all (stopped, frozen, its machine paused), where a slow rank still beats. Reads what the
  // heartbeat thread last read, so a store that hangs cannot hang the caller.
  std::vector<int> frozen(std::chrono::milliseconds limit);

  // How long the store has left the heartbeat's current request unanswered (0 when none is outstanding):
  // TCPStore's client waits for an answer without a timeout, so a store host that is stopped or cut off
  // shows here, not as an error.
  std::chrono::milliseconds store_silence() const;

  // "rank 1 (host h at 10.0.0.2, pid 7)", or "rank 1" when the rendezvous did not say.
  std::string describe(int rank) const;

  struct State;

 private:
  // The latest counters read after `since` by the heartbeat thread, waiting up to `wait`; nullopt and
  // `error` set when the store failed or did not answer in time.
  std::optional<std::vector<int64_t>> fresh_counts(std::chrono::milliseconds wait, std::string& error) const;

  int rank_;
  int world_;
  std::vector<std::string> who_;
  std::shared_ptr<State> state_;  // shared with the thread, which may outlive this object (see ~Heartbeat)
  std::thread thread_;
  // frozen()'s view: each rank's last counter and when it was last seen to move.
  std::vector<int64_t> seen_;
  std::vector<std::chrono::steady_clock::time_point> moved_;
};

}  // namespace berth::dist
