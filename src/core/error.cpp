// Formatting of berth's internal-bug errors.
#include "berth/core/error.h"

namespace berth::detail {

void throw_bug(const char* condition, const char* file, int line, const std::string& message) {
  std::string text = concat("berth internal error: ", condition, " failed at ", file, ":", line);
  if (!message.empty()) text += concat(" (", message, ")");
  text += ". This is a bug in berth, not in your code: please report it with this message.";
  throw InternalError(text);
}

}  // namespace berth::detail
