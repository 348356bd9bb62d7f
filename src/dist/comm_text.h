// Text for the communicators' messages: durations, lists of ranks, c10d's errors without their backtraces,
// this host's name (private to src/dist).
#pragma once

#include <c10/util/Exception.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "core/text.h"

namespace berth::dist {

// "5 s", "2.5 s".
inline std::string seconds_text(std::chrono::milliseconds d) {
  std::ostringstream out;
  const double s = static_cast<double>(d.count()) / 1000.0;
  if (s == std::floor(s)) {
    out << static_cast<long long>(s) << " s";
  } else {
    out << s << " s";
  }
  return out.str();
}

using text::join;

// "0, 2, 3".
inline std::string join_ints(const std::vector<int>& values) {
  std::vector<std::string> parts;
  for (int v : values) parts.push_back(std::to_string(v));
  return join(parts, ", ");
}

// c10::Error's what() carries a C++ backtrace; users need only the message. Trailing dots and spaces go,
// since berth's sentence continues after it.
inline std::string message_of(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  while (!text.empty() && (text.back() == '.' || text.back() == ' ' || text.back() == '\n')) text.pop_back();
  return text;
}

inline std::string this_host() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

}  // namespace berth::dist
