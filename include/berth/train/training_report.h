// output_dir/report.html: one self-contained page (inline CSS and SVG, nothing fetched) with the run's
// curves, confusion matrix, final metrics and run info.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace berth::train {

struct ReportInputs {
  std::string title;
  std::vector<std::map<std::string, double>> log_history;  // HF's log_history entries, each with "step"
  std::vector<std::string> labels;                         // class names, in label-id order
  std::vector<std::vector<int64_t>> confusion;             // [true][pred] counts; may be empty
  std::map<std::string, double> final_metrics;             // e.g. test_accuracy, test_f1
  std::map<std::string, std::string> run_info;             // model, data, device, arguments summary...
};

// Writes the report atomically. Plots: train loss and eval loss over steps (same axes), learning rate,
// gradient norm when logged, and each eval metric (eval_accuracy, eval_f1, ...). NaN/inf values are skipped
// and the plot says how many. Every string is HTML-escaped. Throws berth::Error for a confusion matrix that
// is not square.
void write_training_report(const std::string& path, const ReportInputs& inputs);

// The page write_training_report writes.
std::string render_training_report(const ReportInputs& inputs);

// Axis ticks by Heckbert's nice numbers ("Nice numbers for graph labels", Graphics Gems, 1990): a range that
// covers [lo, hi] and steps of 1, 2 or 5 times a power of ten, about `target` of them. integer_steps keeps
// the step at 1 or more (training steps).
struct AxisTicks {
  double lo = 0, hi = 1, step = 1;
  std::vector<double> values;
  std::vector<std::string> labels;  // as few decimals as the step needs
};
AxisTicks nice_ticks(double lo, double hi, int target = 5, bool integer_steps = false);

// & < > " ' as character references.
std::string html_escape(std::string_view text);

}  // namespace berth::train
