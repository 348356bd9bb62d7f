// The training console: a tqdm-like self-rewriting progress bar on a terminal, plain log lines elsewhere.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>

namespace berth::train {

struct ProgressOptions {
  int64_t total_steps = 0;
  int64_t steps_per_epoch = 0;
  bool enabled = true;      // false = HF's disable_tqdm: no bar, plain log lines only
  std::optional<bool> tty;  // nullopt: isatty(stdout)
  int bar_width = 20;       // cells of the bar itself
  double max_redraws_per_second = 10;
  // The bar is cut to this many columns so it never wraps (a wrapped line cannot be rewritten with \r);
  // 0: the terminal's width when stdout is one, else no limit.
  int columns = 0;
  // The clock, injectable so tests can drive the rate limit and the ETA.
  std::function<std::chrono::steady_clock::time_point()> now;  // empty: std::chrono::steady_clock::now
};

class ProgressReporter {
 public:
  ProgressReporter(std::ostream& out, ProgressOptions options);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // After each optimizer step. On a terminal it redraws the bar (at most max_redraws_per_second, the last
  // step always); elsewhere it prints nothing (log() prints the lines).
  void update(int64_t step, double epoch, double samples_per_second);
  // A log_history entry (loss, learning_rate, grad_norm, epoch; or eval_*; or the final train_runtime...): on
  // a terminal printed above the bar as HF prints it ({'loss': 0.214, 'learning_rate': 4.1e-05,
  // 'epoch': 1.11}), elsewhere as one plain line (step 370/1000 (37%) epoch 1.11 loss 0.2140 lr 4.10e-05 ...
  // eta 1m45s).
  void log(const std::map<std::string, double>& entry);
  // Any other line (saving a checkpoint, early stopping...), printed above the bar.
  void message(const std::string& line);
  // Draws the bar one last time and ends its line. Idempotent; the destructor calls it.
  void finish();

  // The text of the bar as it would be drawn now, without the leading \r and clear-to-end-of-line.
  std::string bar_text() const;
  bool is_tty() const { return tty_; }

 private:
  std::chrono::steady_clock::time_point now() const;
  void draw();
  void clear_bar();
  std::string plain_line(const std::map<std::string, double>& entry) const;
  std::optional<double> seconds_left() const;

  std::ostream& out_;
  ProgressOptions options_;
  bool tty_;
  bool finished_ = false;
  bool bar_drawn_ = false;
  int64_t step_ = 0;
  int64_t first_step_ = -1;  // the first step seen: a resumed run's rate counts from there
  double epoch_ = 0;
  double samples_per_second_ = 0;
  std::optional<double> loss_, learning_rate_;
  std::chrono::steady_clock::time_point start_, first_step_time_, last_draw_;
};

// "01:02", "1:01:02": tqdm's elapsed/remaining format (mm:ss below an hour, h:mm:ss from one hour on).
std::string format_clock(double seconds);
// "1m45s", "2h03m", "12s": the ETA in plain log lines.
std::string format_eta(double seconds);

}  // namespace berth::train
