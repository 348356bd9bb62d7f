// TensorBoardLog: Event protos encoded field by field (varint, fixed64, fixed32, length-delimited) in
// TFRecord frames, appended with one write() per log entry.
#include "berth/train/tensorboard_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "berth/core/crc32c.h"
#include "berth/core/error.h"

namespace berth::train {
namespace {

namespace fs = std::filesystem;

// Protobuf wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_little_endian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void put_key(std::string& out, uint32_t field, uint32_t wire_type) {
  put_varint(out, (field << 3) | wire_type);
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

void put_double(std::string& out, uint32_t field, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  put_key(out, field, kFixed64);
  put_little_endian(out, bits, 8);
}

void put_float(std::string& out, uint32_t field, float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  put_key(out, field, kFixed32);
  put_little_endian(out, bits, 4);
}

// Event{wall_time = 1, step = 2, <body>}: the fields every event shares, then its own.
std::string event(double wall_time, int64_t step, std::string_view body) {
  std::string out;
  put_double(out, 1, wall_time);
  if (step != 0) {  // proto3 leaves a default out, as protobuf's own serializer does
    put_key(out, 2, kVarint);
    put_varint(out, static_cast<uint64_t>(step));  // int64: a negative step is 10 bytes of two's complement
  }
  out.append(body);
  return out;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

uint32_t tfrecord_masked_crc(std::string_view data) {
  const uint32_t crc = crc32c(0, data.data(), data.size());
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view data) {
  std::string length;
  put_little_endian(length, data.size(), 8);
  std::string out = length;
  put_little_endian(out, tfrecord_masked_crc(length), 4);
  out.append(data);
  put_little_endian(out, tfrecord_masked_crc(data), 4);
  return out;
}

std::string tensorboard_file_version_event(double wall_time) {
  std::string body;
  put_bytes(body, 3, "brain.Event:2");
  return event(wall_time, 0, body);
}

std::string tensorboard_scalars_event(double wall_time, int64_t step,
                                      const std::vector<std::pair<std::string, float>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string summary_value;  // Summary.Value{tag = 1, simple_value = 2}
    put_bytes(summary_value, 1, tag);
    put_float(summary_value, 2, value);
    put_bytes(summary, 1, summary_value);  // Summary{repeated value = 1}
  }
  std::string body;
  put_bytes(body, 5, summary);  // Event.summary = 5
  return event(wall_time, step, body);
}

std::string tensorboard_text_event(double wall_time, int64_t step, const std::string& tag,
                                   const std::string& text) {
  std::string plugin_data;  // SummaryMetadata.PluginData{plugin_name = 1}; TextPluginData(version=0) is empty
  put_bytes(plugin_data, 1, "text");
  std::string metadata;  // SummaryMetadata{plugin_data = 1}
  put_bytes(metadata, 1, plugin_data);
  std::string dim;  // TensorShapeProto.Dim{size = 1}
  put_key(dim, 1, kVarint);
  put_varint(dim, 1);
  std::string shape;  // TensorShapeProto{dim = 2}
  put_bytes(shape, 2, dim);
  std::string tensor;  // TensorProto{dtype = 1 (DT_STRING = 7), tensor_shape = 2, string_val = 8}
  put_key(tensor, 1, kVarint);
  put_varint(tensor, 7);
  put_bytes(tensor, 2, shape);
  put_bytes(tensor, 8, text);
  std::string summary_value;  // Summary.Value{tag = 1, tensor = 8, metadata = 9}
  put_bytes(summary_value, 1, tag + "/text_summary");
  put_bytes(summary_value, 8, tensor);
  put_bytes(summary_value, 9, metadata);
  std::string summary;
  put_bytes(summary, 1, summary_value);
  std::string body;
  put_bytes(body, 5, summary);
  return event(wall_time, step, body);
}

std::string tensorboard_tag(const std::string& key) {
  if (key.rfind("eval_", 0) == 0) return "eval/" + key.substr(5);
  if (key.rfind("test_", 0) == 0) return "test/" + key.substr(5);
  return "train/" + key;
}

std::string tensorboard_default_logdir() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char stamp[64] = {};
  // The C locale's %b is English, as Python's datetime.strftime in a C/POSIX locale.
  std::strftime(stamp, sizeof stamp, "%b%d_%H-%M-%S", &local);
  return (fs::path("runs") / (std::string(stamp) + "_" + host_name())).string();
}

std::string tensorboard_logging_dir(const std::string& output_dir, const std::string& trial_name) {
  if (!trial_name.empty()) return (fs::path(output_dir) / tensorboard_default_logdir() / trial_name).string();
  if (const char* dir = std::getenv("TENSORBOARD_LOGGING_DIR"); dir != nullptr && *dir != '\0') {
    const std::string value = dir;
    const char* home = std::getenv("HOME");
    if (value.rfind("~/", 0) == 0 && home != nullptr) return std::string(home) + value.substr(1);
    return value;
  }
  return (fs::path(output_dir) / tensorboard_default_logdir()).string();
}

TensorBoardLog::TensorBoardLog(const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  BERTH_CHECK(!error && fs::is_directory(dir), dir, ": cannot create the TensorBoard logging directory (",
              error ? error.message() : "a file is in the way",
              "). Fix: make output_dir writable, set TENSORBOARD_LOGGING_DIR to a writable directory, or "
              "report_to jsonl");
  char name[128] = {};
  std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.",
                static_cast<long long>(std::time(nullptr)));
  path_ = (fs::path(dir) / (name + host_name() + "." + std::to_string(::getpid()) + ".0")).string();
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  BERTH_CHECK(fd_ >= 0, path_, ": cannot create the TensorBoard event file (", errno_text(),
              "). Fix: make the directory writable, set TENSORBOARD_LOGGING_DIR to a writable directory, or "
              "report_to jsonl");
  append(tfrecord(tensorboard_file_version_event(now_seconds())));
}

TensorBoardLog::~TensorBoardLog() {
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardLog::write_scalars(int64_t step, const std::map<std::string, double>& entry) {
  std::vector<std::pair<std::string, float>> scalars;
  for (const auto& [key, value] : entry)
    if (key != "step") scalars.emplace_back(tensorboard_tag(key), static_cast<float>(value));
  if (scalars.empty()) return;
  append(tfrecord(tensorboard_scalars_event(now_seconds(), step, scalars)));
}

void TensorBoardLog::write_text(int64_t step, const std::string& tag, const std::string& text) {
  append(tfrecord(tensorboard_text_event(now_seconds(), step, tag, text)));
}

void TensorBoardLog::append(const std::string& records) {
  size_t written = 0;
  while (written < records.size()) {
    const ssize_t n = ::write(fd_, records.data() + written, records.size() - written);
    if (n < 0 && errno == EINTR) continue;
    BERTH_CHECK(n > 0, path_, ": writing a TensorBoard event failed (", errno_text(),
                "). Fix: check free space, or report_to jsonl");
    written += static_cast<size_t>(n);
  }
}

}  // namespace berth::train
