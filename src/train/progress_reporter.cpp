// ProgressReporter: tqdm's bar and HF's log lines on a terminal; one plain line per log entry elsewhere.
#include "berth/train/progress_reporter.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <vector>

#include "core/text.h"

namespace berth::train {
namespace {

// As Python's repr prints a float in HF's dict lines, kept short: 1.0, 0.2143, 4.1e-05.
std::string python_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return text::printf_number("%.1f", value);
  // Four significant digits keep the line short; large values (runtimes, flos) keep their fraction's first
  // digit.
  if (std::fabs(value) >= 1e4 && std::fabs(value) < 1e15) return text::printf_number("%.1f", value);
  return text::printf_number("%.4g", value);
}

// The order HF's Trainer logs keys in (loss, grad_norm, learning_rate, ..., epoch), the rest by name.
int key_rank(const std::string& key) {
  static const std::vector<std::string> order{"loss", "grad_norm", "learning_rate"};
  for (size_t i = 0; i < order.size(); ++i)
    if (key == order[i]) return static_cast<int>(i);
  if (key == "epoch") return 100;
  return 50;
}

std::vector<std::pair<std::string, double>> ordered(const std::map<std::string, double>& entry) {
  std::vector<std::pair<std::string, double>> items(entry.begin(), entry.end());
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return key_rank(a.first) < key_rank(b.first); });
  return items;
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// Cuts UTF-8 text to `columns` code points (the bar's block characters are one column each).
std::string cut_to_columns(const std::string& text, int columns) {
  if (columns <= 0) return text;
  int seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && seen++ == columns) return text.substr(0, i);
  }
  return text;
}

int terminal_columns() {
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 0;
}

}  // namespace

std::string format_clock(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<int64_t>(std::llround(seconds));
  const int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  char buffer[48];
  if (h > 0) {
    std::snprintf(buffer, sizeof buffer, "%lld:%02lld:%02lld", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  } else {
    std::snprintf(buffer, sizeof buffer, "%02lld:%02lld", static_cast<long long>(m),
                  static_cast<long long>(s));
  }
  return buffer;
}

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<int64_t>(std::llround(seconds));
  const int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  char buffer[48];
  if (h > 0) {
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", static_cast<long long>(h),
                  static_cast<long long>(m));
  } else if (m > 0) {
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", static_cast<long long>(m),
                  static_cast<long long>(s));
  } else {
    std::snprintf(buffer, sizeof buffer, "%llds", static_cast<long long>(s));
  }
  return buffer;
}

ProgressReporter::ProgressReporter(std::ostream& out, ProgressOptions options)
    : out_(out), options_(std::move(options)) {
  const bool terminal = options_.tty.value_or(::isatty(STDOUT_FILENO) != 0);
  tty_ = options_.enabled && terminal;
  if (tty_ && options_.columns == 0 && !options_.tty.has_value()) options_.columns = terminal_columns();
  start_ = now();
  last_draw_ = start_;
}

ProgressReporter::~ProgressReporter() {
  try {
    finish();
  } catch (...) {
    // A destructor must not throw; a failing console is not worth a crash.
  }
}

std::chrono::steady_clock::time_point ProgressReporter::now() const {
  return options_.now ? options_.now() : std::chrono::steady_clock::now();
}

std::optional<double> ProgressReporter::seconds_left() const {
  if (first_step_ < 0 || step_ <= first_step_ || options_.total_steps <= 0) return std::nullopt;
  const double elapsed = std::chrono::duration<double>(now() - first_step_time_).count();
  if (elapsed <= 0) return std::nullopt;
  const double rate = static_cast<double>(step_ - first_step_) / elapsed;
  return static_cast<double>(std::max<int64_t>(0, options_.total_steps - step_)) / rate;
}

void ProgressReporter::update(int64_t step, double epoch, double samples_per_second) {
  const auto t = now();
  if (first_step_ < 0) {
    first_step_ = step;
    first_step_time_ = t;
  }
  step_ = step;
  epoch_ = epoch;
  samples_per_second_ = samples_per_second;
  if (!tty_ || finished_) return;
  const double interval = options_.max_redraws_per_second > 0 ? 1.0 / options_.max_redraws_per_second : 0;
  const bool due = !bar_drawn_ || std::chrono::duration<double>(t - last_draw_).count() >= interval;
  if (due || step == options_.total_steps) draw();
}

std::string ProgressReporter::bar_text() const {
  const int64_t total = options_.total_steps;
  const double fraction =
      total > 0 ? std::clamp(static_cast<double>(step_) / static_cast<double>(total), 0.0, 1.0) : 0;
  std::string text;
  if (total > 0) {
    text += text::printf_number(" %3.0f%%|", std::floor(fraction * 100));
    // tqdm's smooth bar: full blocks, then one partial block in eighths, then spaces.
    static const char* const partial[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    const int width = std::max(1, options_.bar_width);
    const double cells = fraction * width;
    const int full = static_cast<int>(cells);
    const int eighths = static_cast<int>((cells - full) * 8);
    for (int i = 0; i < full; ++i) text += "█";
    int used = full;
    if (full < width) {
      text += eighths > 0 ? partial[eighths] : " ";
      ++used;
    }
    text += std::string(static_cast<size_t>(width - used), ' ');
    text += "| " + std::to_string(step_) + "/" + std::to_string(total);
  } else {
    text += " " + std::to_string(step_) + "it";
  }
  const double elapsed = std::chrono::duration<double>(now() - start_).count();
  text += " [" + format_clock(elapsed);
  if (total > 0) {
    const auto left = seconds_left();
    text += "<" + (left ? format_clock(*left) : std::string("?"));
  }
  // The rate since the first step seen, as the ETA uses; tqdm's s/it below one step a second.
  const double since_first =
      first_step_ >= 0 ? std::chrono::duration<double>(now() - first_step_time_).count() : 0;
  if (first_step_ >= 0 && step_ > first_step_ && since_first > 0) {
    const double rate = static_cast<double>(step_ - first_step_) / since_first;
    text += rate >= 1 ? ", " + text::printf_number("%.2f", rate) + " it/s"
                      : ", " + text::printf_number("%.2f", 1 / rate) + " s/it";
  } else {
    text += ", ? it/s";
  }
  text += ", epoch " + text::printf_number("%.2f", epoch_);
  if (loss_) text += ", loss " + text::printf_number("%.3g", *loss_);
  if (learning_rate_) text += ", lr " + text::printf_number("%.2g", *learning_rate_);
  if (samples_per_second_ > 0) text += ", " + text::printf_number("%.1f", samples_per_second_) + " samples/s";
  text += "]";
  return cut_to_columns(text, options_.columns > 0 ? options_.columns - 1 : 0);
}

void ProgressReporter::draw() {
  // \r back to the start, the bar, then clear whatever a longer previous bar left behind.
  out_ << '\r' << bar_text() << "\x1b[K" << std::flush;
  bar_drawn_ = true;
  last_draw_ = now();
}

void ProgressReporter::clear_bar() {
  if (bar_drawn_) out_ << "\r\x1b[K";
}

std::string ProgressReporter::plain_line(const std::map<std::string, double>& entry) const {
  const auto step_it = entry.find("step");
  const int64_t step = step_it != entry.end() ? static_cast<int64_t>(step_it->second) : step_;
  std::string line = "step " + std::to_string(step);
  if (options_.total_steps > 0) {
    line += "/" + std::to_string(options_.total_steps) + " (" +
            std::to_string(step * 100 / options_.total_steps) + "%)";
  }
  const auto epoch_it = entry.find("epoch");
  line += " epoch " + text::printf_number("%.2f", epoch_it != entry.end() ? epoch_it->second : epoch_);
  for (const auto& [key, value] : ordered(entry)) {
    if (key == "step" || key == "epoch" || key == "total_flos") continue;
    if (key == "learning_rate") {
      line += " lr " + text::printf_number("%.2e", value);
    } else if (ends_with(key, "loss")) {
      line += " " + key + " " + text::printf_number("%.4f", value);
    } else {
      line += " " + key + " " + text::printf_number("%.4g", value);
    }
  }
  // A training-step entry also says how fast it goes and how long is left.
  if (entry.count("loss") && entry.count("learning_rate")) {
    if (samples_per_second_ > 0)
      line += " " + text::printf_number("%.1f", samples_per_second_) + " samples/s";
    const auto left = seconds_left();
    if (left) line += " eta " + format_eta(*left);
  }
  return line;
}

void ProgressReporter::log(const std::map<std::string, double>& entry) {
  if (auto it = entry.find("loss"); it != entry.end()) loss_ = it->second;
  if (auto it = entry.find("learning_rate"); it != entry.end()) learning_rate_ = it->second;
  if (!tty_) {
    out_ << plain_line(entry) << '\n' << std::flush;
    return;
  }
  // HF prints str(logs): a Python dict, without step and total_flos.
  std::string line = "{";
  bool first = true;
  for (const auto& [key, value] : ordered(entry)) {
    if (key == "step" || key == "total_flos") continue;
    line += (first ? "'" : ", '") + key + "': " + python_number(value);
    first = false;
  }
  line += "}";
  message(line);
}

void ProgressReporter::message(const std::string& line) {
  if (!tty_) {
    out_ << line << '\n' << std::flush;
    return;
  }
  clear_bar();
  out_ << line << '\n';
  if (bar_drawn_ && !finished_) {
    draw();
  } else {
    out_ << std::flush;
  }
}

void ProgressReporter::finish() {
  if (finished_) return;
  finished_ = true;
  if (!tty_ || first_step_ < 0) return;
  draw();
  out_ << '\n' << std::flush;
}

}  // namespace berth::train
