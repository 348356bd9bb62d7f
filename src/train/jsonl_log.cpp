// JsonlLog: append-only JSON lines, one write() each; a crash's cut-off last line is dropped on resume.
#include "berth/train/jsonl_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"

namespace berth::train {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::ordered_json number(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

}  // namespace

JsonlLog::JsonlLog(const std::string& path, bool append) : path_(path) {
  std::ifstream probe(path, std::ios::binary);
  if (!append || !probe.good()) {
    write_file_atomically(path, std::string_view());
  } else {
    const std::string text = read_all(path);
    if (!text.empty() && text.back() != '\n') {
      const size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
      note_ = detail::concat(
          path, ": dropped its last line, cut short by the crash that stopped the previous run (",
          text.size() - keep, " bytes: ", text.substr(keep, 60), text.size() - keep > 60 ? "..." : "", ")");
      write_file_atomically(path, std::string_view(text).substr(0, keep));
    }
  }
  open_for_append();
}

JsonlLog::~JsonlLog() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlLog::open_for_append() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  BERTH_CHECK(fd_ >= 0, path_, ": cannot open the log for appending (", errno_text(),
              "). Fix: make sure the output directory is writable");
}

void JsonlLog::write(const std::map<std::string, double>& entry,
                     const std::map<std::string, std::string>& strings) {
  nlohmann::ordered_json line = nlohmann::ordered_json::object();
  // step and epoch first, as a reader scans for them; the rest by name.
  if (auto it = entry.find("step"); it != entry.end()) {
    const double step = it->second;
    if (std::isfinite(step) && step == std::floor(step) && std::fabs(step) < 9e15) {
      line["step"] = static_cast<int64_t>(step);
    } else {
      line["step"] = number(step);
    }
  }
  if (auto it = entry.find("epoch"); it != entry.end()) line["epoch"] = number(it->second);
  for (const auto& [key, value] : entry)
    if (key != "step" && key != "epoch") line[key] = number(value);
  for (const auto& [key, value] : strings) {
    BERTH_CHECK(!entry.count(key), path_, ": log key \"", key,
                "\" is both a number and a string in one entry. Fix: give one of them another name");
    line[key] = value;
  }
  // Invalid UTF-8 in a string is replaced rather than thrown: a log line is not worth stopping training for.
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    BERTH_CHECK(n > 0, path_, ": writing a log line failed (", errno_text(), "). Fix: check free space");
    written += static_cast<size_t>(n);
  }
}

int64_t JsonlLog::drop_after_step(int64_t step) {
  const std::string text = read_all(path_);
  std::istringstream lines(text);
  std::string kept, line;
  int64_t dropped = 0;
  while (std::getline(lines, line)) {
    const auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const bool later = parsed.is_object() && parsed.contains("step") && parsed["step"].is_number() &&
                       parsed["step"].get<double>() > static_cast<double>(step);
    if (later) {
      ++dropped;
    } else {
      kept += line + "\n";
    }
  }
  if (dropped > 0) {
    write_file_atomically(path_, kept);
    open_for_append();  // the rename replaced the file the old descriptor pointed to
  }
  return dropped;
}

}  // namespace berth::train
