// output_dir/log.jsonl: every log_history entry as one JSON object per line, written as it happens.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace berth::train {

class JsonlLog {
 public:
  // append = false: a fresh, empty log (an existing one is replaced). append = true (resuming): the existing
  // log is kept; a last line a crash cut short (no final newline) is dropped first, and note() says so.
  explicit JsonlLog(const std::string& path, bool append);
  ~JsonlLog();
  JsonlLog(const JsonlLog&) = delete;
  JsonlLog& operator=(const JsonlLog&) = delete;

  // One line: {"step": 370, "epoch": 1.11, ...the other numbers by name..., ...the strings...}. An
  // integer-valued "step" is written as an integer; NaN and infinities as null (JSON has neither). The line
  // reaches the file in one write() call, so a crash loses at most the line being written. A key in both maps
  // is an error.
  void write(const std::map<std::string, double>& entry,
             const std::map<std::string, std::string>& strings = {});

  // Resuming from a checkpoint at `step`: removes the lines logged after it (by a run that went on past its
  // last save before it stopped), so the log does not repeat those steps. Returns how many lines it removed.
  int64_t drop_after_step(int64_t step);

  const std::string& path() const { return path_; }
  // What opening the log repaired, as a sentence for the console; empty when nothing was.
  const std::string& note() const { return note_; }

 private:
  void open_for_append();

  std::string path_;
  std::string note_;
  int fd_ = -1;
};

}  // namespace berth::train
