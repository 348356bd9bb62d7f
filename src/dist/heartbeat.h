// Heartbeat: each rank's counter in the rendezvous store, bumped twice a second, so that after a failed
// collective the ranks whose counters stopped are named as dead, where a timeout alone cannot tell a dead
// rank from one that never came (private to src/dist).
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace c10d {
class Store;
}

namespace berth::dist {

class Heartbeat {
 public:
  // Starts beating for `rank` of `world` on a thread of its own; the destructor stops it.
  Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank, int world);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // A sentence for the error: which ranks stopped beating, or that all others are alive. Watches the
  // counters for a while (1.6 s) first.
  std::string diagnose() const;

  // The other ranks whose heartbeat has not moved for at least `limit`, as seen across calls (the first call
  // starts every rank's clock). For a rank waiting on a collective: a rank that stopped beating is not
  // running at all (stopped, frozen, its machine paused), where a slow rank still beats.
  std::vector<int> frozen(std::chrono::milliseconds limit);

 private:
  std::string key(int r) const;
  void beat();
  std::vector<int64_t> read_all() const;
  void run();

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int world_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  // frozen()'s view: each rank's last counter and when it last moved.
  std::mutex watch_mutex_;
  std::vector<int64_t> seen_;
  std::vector<std::chrono::steady_clock::time_point> moved_;
};

}  // namespace berth::dist
