// report_to tensorboard: HF's TensorBoardCallback's event files (events.out.tfevents.*), written by hand as
// TFRecord-framed Event protos, so TensorBoard reads them without berth linking TensorFlow or protobuf.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::train {

// TFRecord's masked CRC-32C: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so a CRC of CRCs is not a CRC.
uint32_t tfrecord_masked_crc(std::string_view data);

// One TFRecord: the length as little-endian uint64, its masked CRC-32C, the data, the data's masked CRC-32C.
std::string tfrecord(std::string_view data);

// Event protos (tensorboard/compat/proto/event.proto), serialized. The first record of every file:
// Event{wall_time, file_version "brain.Event:2"}.
std::string tensorboard_file_version_event(double wall_time);
// Event{wall_time, step, summary{value{tag, simple_value}...}}: what SummaryWriter.add_scalar writes, for
// several scalars at one step.
std::string tensorboard_scalars_event(double wall_time, int64_t step,
                                      const std::vector<std::pair<std::string, float>>& scalars);
// SummaryWriter.add_text(tag, text): tag + "/text_summary", the text plugin's metadata and a DT_STRING tensor
// of shape (1,) holding the UTF-8 text.
std::string tensorboard_text_event(double wall_time, int64_t step, const std::string& tag,
                                   const std::string& text);

// HF's rewrite_logs for one key: eval_x -> eval/x, test_x -> test/x, anything else -> train/x.
std::string tensorboard_tag(const std::string& key);

// HF's default_logdir(): "runs/<%b%d_%H-%M-%S local time>_<hostname>", relative to output_dir.
std::string tensorboard_default_logdir();

// HF's logging dir for a run: $TENSORBOARD_LOGGING_DIR (~ expanded) when set, else
// output_dir/<default_logdir>; a hyperparameter-search trial always logs to
// output_dir/<default_logdir>/<trial>.
std::string tensorboard_logging_dir(const std::string& output_dir, const std::string& trial_name);

// One event file, opened fresh (TensorBoard merges the files of a directory, so a resumed run adds its own).
class TensorBoardLog {
 public:
  // Creates `dir` (and its parents) and events.out.tfevents.<unix time>.<hostname>.<pid>.0 in it, as
  // tensorboard's EventFileWriter names them, starting with the file-version event. Throws berth::Error
  // naming the directory and the fix when it cannot.
  explicit TensorBoardLog(const std::string& dir);
  ~TensorBoardLog();
  TensorBoardLog(const TensorBoardLog&) = delete;
  TensorBoardLog& operator=(const TensorBoardLog&) = delete;

  // HF's TensorBoardCallback.on_log: every number of a log entry but "step" as a scalar named by
  // tensorboard_tag, at `step`. One write() call per entry, so the file is flushed as it goes and a crash
  // loses at most the entry being written. NaN and infinities are written as they are.
  void write_scalars(int64_t step, const std::map<std::string, double>& entry);
  // SummaryWriter.add_text: HF logs the training arguments' JSON as "args" at step 0.
  void write_text(int64_t step, const std::string& tag, const std::string& text);

  const std::string& path() const { return path_; }

 private:
  void append(const std::string& records);

  std::string path_;
  int fd_ = -1;
};

}  // namespace berth::train
