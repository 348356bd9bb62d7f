// Heartbeat: counters in the rendezvous store that tell a dead rank from a stuck one.
#include "dist/heartbeat.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <utility>

#include "dist/comm_text.h"

namespace berth::dist {
namespace {

constexpr std::chrono::milliseconds kHeartbeatPeriod{500};
// How long a failed collective watches the heartbeats before naming the ranks that stopped.
constexpr std::chrono::milliseconds kHeartbeatWatch{1600};

}  // namespace

Heartbeat::Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank, int world)
    : store_(std::move(store)), rank_(rank), world_(world) {
  beat();
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string Heartbeat::diagnose() const {
  try {
    const std::vector<int64_t> before = read_all();
    std::this_thread::sleep_for(kHeartbeatWatch);
    const std::vector<int64_t> after = read_all();
    std::vector<int> stopped;
    for (int r = 0; r < world_; ++r)
      if (r != rank_ && after[r] == before[r]) stopped.push_back(r);
    if (stopped.empty())
      return "Every other rank is still alive (heartbeats in the store), so one of them did not reach this "
             "operation: it is stuck or took a different path.";
    return std::string(stopped.size() == 1 ? "Rank " : "Ranks ") + join_ints(stopped) +
           (stopped.size() == 1 ? " has" : " have") + " stopped its heartbeat for " +
           seconds_text(kHeartbeatWatch) + ": it probably crashed or was killed.";
  } catch (const std::exception& e) {
    return "The rendezvous store (hosted by rank 0) cannot be reached either (" + message_of(e) +
           "): rank 0 probably died.";
  }
}

std::vector<int> Heartbeat::frozen(std::chrono::milliseconds limit) {
  const std::vector<int64_t> counts = read_all();
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(watch_mutex_);
  if (seen_.empty()) moved_.assign(counts.size(), now);
  std::vector<int> stuck;
  for (int r = 0; r < world_; ++r) {
    const auto i = static_cast<size_t>(r);
    if (seen_.empty() || counts[i] != seen_[i]) moved_[i] = now;
    if (r != rank_ && now - moved_[i] >= limit) stuck.push_back(r);
  }
  seen_ = counts;
  return stuck;
}

std::string Heartbeat::key(int r) const { return "heartbeat/" + std::to_string(r); }

void Heartbeat::beat() {
  try {
    store_->add(key(rank_), 1);
  } catch (const std::exception&) {
    // The store's host is gone; the next collective reports it.
  }
}

std::vector<int64_t> Heartbeat::read_all() const {
  std::vector<int64_t> counts;
  for (int r = 0; r < world_; ++r) counts.push_back(store_->add(key(r), 0));
  return counts;
}

void Heartbeat::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!cv_.wait_for(lock, kHeartbeatPeriod, [this] { return stop_; })) {
    lock.unlock();
    beat();
    lock.lock();
  }
}

}  // namespace berth::dist
