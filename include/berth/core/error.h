// berth's two check macros: BERTH_CHECK for the user's mistakes, BERTH_BUG for ours.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace berth {

// A mistake in the user's input, environment or code. The message says what was
// expected, what was found and how to fix it; the CLI prints it and exits with 2.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A tensor, batch or optimizer state on a device other than the one it must be on.
class PlacementError : public Error {
 public:
  using Error::Error;
};

// A broken invariant inside berth itself: never the user's fault.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

namespace detail {

template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  ((out << std::forward<Args>(args)), ...);
  return out.str();
}

[[noreturn]] void throw_bug(const char* condition, const char* file, int line, const std::string& message);

}  // namespace detail
}  // namespace berth

// Throws berth::Error (or ErrorType) whose text is the streamed arguments, e.g.
//   BERTH_CHECK(n > 0, "--threads must be positive, found ", n, ". Fix: pass --threads 1 or more");
#define BERTH_CHECK(cond, ...)                                               \
  do {                                                                       \
    if (!(cond)) throw ::berth::Error(::berth::detail::concat(__VA_ARGS__)); \
  } while (false)

#define BERTH_CHECK_AS(ErrorType, cond, ...)                            \
  do {                                                                  \
    if (!(cond)) throw ErrorType(::berth::detail::concat(__VA_ARGS__)); \
  } while (false)

#define BERTH_FAIL(...) throw ::berth::Error(::berth::detail::concat(__VA_ARGS__))

// Marks an invariant of berth's own code; failing it is a berth bug.
#define BERTH_BUG(cond, ...)                                                                       \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::berth::detail::throw_bug(#cond, __FILE__, __LINE__, ::berth::detail::concat(__VA_ARGS__)); \
  } while (false)
