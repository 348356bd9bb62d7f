// SignalWatch: SIGINT and SIGTERM counted by a handler that touches only lock-free atomics.
#include "launch/signal_watch.h"

#include <signal.h>

#include <atomic>
#include <mutex>

namespace berth::launch::detail {
namespace {

// A signal handler may only touch lock-free atomics; every launch compares the count with its own start.
std::atomic<int> g_signal_count{0};
std::atomic<int> g_last_signal{0};
std::mutex g_handler_mutex;
int g_handler_users = 0;
struct sigaction g_old_int {};
struct sigaction g_old_term {};

void on_signal(int sig) {
  g_last_signal.store(sig);
  g_signal_count.fetch_add(1);
}

}  // namespace

SignalWatch::SignalWatch() {
  std::lock_guard<std::mutex> lock(g_handler_mutex);
  if (g_handler_users++ == 0) {
    struct sigaction sa {};
    sa.sa_handler = &on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &sa, &g_old_int);
    ::sigaction(SIGTERM, &sa, &g_old_term);
  }
  start_ = g_signal_count.load();
}

SignalWatch::~SignalWatch() {
  std::lock_guard<std::mutex> lock(g_handler_mutex);
  if (--g_handler_users == 0) {
    ::sigaction(SIGINT, &g_old_int, nullptr);
    ::sigaction(SIGTERM, &g_old_term, nullptr);
  }
}

int SignalWatch::received() const { return g_signal_count.load() != start_ ? g_last_signal.load() : 0; }

}  // namespace berth::launch::detail
