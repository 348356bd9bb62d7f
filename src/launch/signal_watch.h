// SignalWatch: catches SIGINT and SIGTERM while a launch runs, for the launcher to forward to its workers
// (private to the library).
#pragma once

namespace berth::launch::detail {

// Installs the handlers when the first watch begins and restores the previous ones when the last ends, so
// concurrent launches share them; each watch sees only the signals received since it began.
class SignalWatch {
 public:
  SignalWatch();
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  // The signal received since this watch began; 0 when none.
  int received() const;

 private:
  int start_ = 0;
};

}  // namespace berth::launch::detail
