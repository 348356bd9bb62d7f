// Heartbeat: counters in the rendezvous store that tell a dead rank from a stuck one, read on a thread of
// their own so that a store whose host stopped answering is measured, not waited on.
#include "dist/heartbeat.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "dist/comm_text.h"

namespace berth::dist {
namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

constexpr Millis kHeartbeatPeriod{500};
// How long a failed collective watches the heartbeats before naming the ranks that stopped.
constexpr Millis kHeartbeatWatch{1600};
// How long the destructor waits for the thread to finish a store request before leaving it behind.
constexpr Millis kStopWait{2000};

std::string counter_key(int r) { return "heartbeat/" + std::to_string(r); }

}  // namespace

// What the heartbeat thread and the ranks' waits share.
struct Heartbeat::State {
  std::mutex mutex;
  std::condition_variable cv;
  bool stop = false;
  bool exited = false;
  Clock::time_point watch_until{};                 // the thread reads every counter while now < watch_until
  std::optional<Clock::time_point> pending_since;  // a store request outstanding since
  std::vector<int64_t> counts;                     // the latest read of every counter...
  Clock::time_point read_started{};                // ...which started then
  std::string error;                               // the latest read's failure, or ""
  Clock::time_point attempt_started{};  // the latest read attempt (success or failure) started then
};

namespace {

// The thread: a beat every period, and while someone watches, a read of every counter.
void heartbeat_loop(const std::shared_ptr<Heartbeat::State>& s, const c10::intrusive_ptr<c10d::Store>& store,
                    int rank, int world) {
  std::unique_lock<std::mutex> lock(s->mutex);
  while (!s->stop) {
    const Clock::time_point started = Clock::now();
    const bool watch = started < s->watch_until;
    s->pending_since = started;
    lock.unlock();
    std::vector<int64_t> counts;
    std::string error;
    try {
      store->add(counter_key(rank), 1);
      for (int r = 0; watch && r < world; ++r) counts.push_back(store->add(counter_key(r), 0));
    } catch (const std::exception& e) {
      error = message_of(e);  // the store's host is gone; the waiting rank reports it
    }
    lock.lock();
    s->pending_since.reset();
    if (watch || !error.empty()) {
      s->attempt_started = started;
      s->error = error;
      if (error.empty()) {
        s->counts = std::move(counts);
        s->read_started = started;
      }
      s->cv.notify_all();
    }
    s->cv.wait_for(lock, kHeartbeatPeriod, [&] { return s->stop; });
  }
  s->exited = true;
  s->cv.notify_all();
}

}  // namespace

Heartbeat::Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank, int world, std::vector<std::string> who)
    : rank_(rank), world_(world), who_(std::move(who)), state_(std::make_shared<State>()) {
  try {
    store->add(counter_key(rank_), 1);  // the counter exists before any peer reads it
  } catch (const std::exception&) {
    // The store's host is gone; the next collective reports it.
  }
  thread_ = std::thread(heartbeat_loop, state_, std::move(store), rank_, world_);
}

Heartbeat::~Heartbeat() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->stop = true;
  state_->cv.notify_all();
  // A thread blocked on a store that never answers would block this join for ever: it is left behind
  // holding the shared state and the store, and ends with the process.
  if (state_->cv.wait_for(lock, kStopWait, [&] { return state_->exited; })) {
    lock.unlock();
    thread_.join();
  } else {
    thread_.detach();
  }
}

std::string Heartbeat::describe(int rank) const {
  const auto i = static_cast<size_t>(rank);
  if (i < who_.size() && !who_[i].empty()) return "rank " + std::to_string(rank) + " (" + who_[i] + ")";
  return "rank " + std::to_string(rank);
}

std::optional<std::vector<int64_t>> Heartbeat::fresh_counts(Millis wait, std::string& error) const {
  std::unique_lock<std::mutex> lock(state_->mutex);
  const Clock::time_point since = Clock::now();
  state_->watch_until = std::max(state_->watch_until, since + wait + kHeartbeatPeriod);
  state_->cv.notify_all();
  if (!state_->cv.wait_for(lock, wait, [&] { return state_->attempt_started >= since; })) {
    error = "no answer for " + seconds_text(wait);
    return std::nullopt;
  }
  if (!state_->error.empty()) {
    error = state_->error;
    return std::nullopt;
  }
  return state_->counts;
}

std::string Heartbeat::diagnose() const {
  std::string error;
  std::optional<std::vector<int64_t>> before = fresh_counts(kHeartbeatWatch, error);
  std::optional<std::vector<int64_t>> after;
  if (before) {
    std::this_thread::sleep_for(kHeartbeatWatch);
    after = fresh_counts(kHeartbeatWatch, error);
  }
  if (!after)
    return "The rendezvous store (hosted by " + describe(0) + ") cannot be reached either (" + error +
           "): rank 0 probably died, or its host is stopped or cut off.";
  std::vector<std::string> stopped;
  for (int r = 0; r < world_; ++r)
    if (r != rank_ && (*after)[r] == (*before)[r]) stopped.push_back(describe(r));
  if (stopped.empty())
    return "Every other rank is still alive (heartbeats in the store), so one of them did not reach this "
           "operation: it is stuck or took a different path.";
  std::string who = stopped[0];
  who[0] = 'R';
  for (size_t i = 1; i < stopped.size(); ++i) who += ", " + stopped[i];
  return who + (stopped.size() == 1 ? " has" : " have") + " stopped its heartbeat for " +
         seconds_text(kHeartbeatWatch) + ": it probably crashed or was killed.";
}

std::vector<int> Heartbeat::frozen(Millis limit) {
  // Under the state's lock: several waits (async all-reduces) may ask at once.
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->watch_until = std::max(state_->watch_until, Clock::now() + 4 * kHeartbeatPeriod);
  const std::vector<int64_t>& counts = state_->counts;
  const Clock::time_point read_at = state_->read_started;
  if (static_cast<int>(counts.size()) != world_) return {};  // no read yet
  if (seen_.empty()) moved_.assign(counts.size(), read_at);
  std::vector<int> stuck;
  for (int r = 0; r < world_; ++r) {
    const auto i = static_cast<size_t>(r);
    if (seen_.empty() || counts[i] != seen_[i]) moved_[i] = read_at;
    // Judged at the read's time, not now: a thread held up by a slow store must not make ranks look frozen.
    if (r != rank_ && read_at - moved_[i] >= limit) stuck.push_back(r);
  }
  seen_ = counts;
  return stuck;
}

Millis Heartbeat::store_silence() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->pending_since) return Millis(0);
  return std::chrono::duration_cast<Millis>(Clock::now() - *state_->pending_since);
}

}  // namespace berth::dist
