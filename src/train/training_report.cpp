// report.html: curves as inline SVG polylines on nice-number axes, the confusion matrix as a heat-mapped
// table.
#include "berth/train/training_report.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "berth/config.h"
#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "core/text.h"

namespace berth::train {
namespace {

// Heckbert's nicenum: 1, 2, 5 or 10 times a power of ten near x (rounded, or the next one up).
double nice_number(double x, bool round) {
  const double exponent = std::floor(std::log10(x));
  const double fraction = x / std::pow(10.0, exponent);
  double nice;
  if (round) {
    nice = fraction < 1.5 ? 1 : fraction < 3 ? 2 : fraction < 7 ? 5 : 10;
  } else {
    nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
  }
  return nice * std::pow(10.0, exponent);
}

std::string metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return text::printf_number("%.0f", value);
  return text::printf_number("%.4g", value);
}

struct Series {
  std::string name;
  std::string color;
  bool markers = false;  // eval points are sparse: dots make each one visible
  std::vector<std::pair<double, double>> points;
  int64_t skipped = 0;  // NaN/inf values left out
};

// The values of `key` over steps, in log order; entries without it are not points, non-finite values are
// counted.
Series series_of(const std::vector<std::map<std::string, double>>& history, const std::string& key,
                 const std::string& name, const std::string& color, bool markers) {
  Series series{name, color, markers, {}, 0};
  for (const auto& entry : history) {
    const auto value = entry.find(key);
    const auto step = entry.find("step");
    if (value == entry.end() || step == entry.end()) continue;
    if (!std::isfinite(value->second) || !std::isfinite(step->second)) {
      ++series.skipped;
      continue;
    }
    series.points.emplace_back(step->second, value->second);
  }
  return series;
}

constexpr double kWidth = 640, kHeight = 260, kLeft = 70, kRight = 16, kTop = 14, kBottom = 40;

// One chart: an SVG with axes, grid, ticks and a polyline per series, a legend and notes below.
std::string chart(const std::string& title, const std::vector<Series>& all_series) {
  std::vector<const Series*> series;
  for (const auto& s : all_series)
    if (!s.points.empty() || s.skipped > 0) series.push_back(&s);
  std::ostringstream html;
  html << "<section class=\"chart\"><h3>" << html_escape(title) << "</h3>\n";
  bool any_point = false;
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const Series* s : series) {
    for (const auto& [x, y] : s->points) {
      any_point = true;
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x), y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  }
  if (!any_point) {
    html << "<p class=\"note\">No finite values were logged.</p>\n";
  } else {
    const AxisTicks xt = nice_ticks(x_lo, x_hi, 6, true);
    const AxisTicks yt = nice_ticks(y_lo, y_hi, 5, false);
    const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
    auto px = [&](double x) { return kLeft + (x - xt.lo) / (xt.hi - xt.lo) * plot_w; };
    auto py = [&](double y) { return kTop + (1 - (y - yt.lo) / (yt.hi - yt.lo)) * plot_h; };
    html << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << kWidth << " " << kHeight
         << "\" role=\"img\" aria-label=\"" << html_escape(title) << "\">\n";
    for (size_t i = 0; i < yt.values.size(); ++i) {
      const double y = py(yt.values[i]);
      html << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << kWidth - kRight << "\" y1=\"" << y
           << "\" y2=\"" << y << "\"/><text class=\"tick\" x=\"" << kLeft - 6 << "\" y=\"" << y + 4
           << "\" text-anchor=\"end\">" << html_escape(yt.labels[i]) << "</text>\n";
    }
    for (size_t i = 0; i < xt.values.size(); ++i) {
      const double x = px(xt.values[i]);
      html << "<line class=\"grid\" x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << kTop << "\" y2=\""
           << kHeight - kBottom << "\"/><text class=\"tick\" x=\"" << x << "\" y=\"" << kHeight - kBottom + 16
           << "\" text-anchor=\"middle\">" << html_escape(xt.labels[i]) << "</text>\n";
    }
    html << "<rect class=\"frame\" x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << plot_w
         << "\" height=\"" << plot_h << "\"/>\n<text class=\"axis\" x=\"" << kLeft + plot_w / 2 << "\" y=\""
         << kHeight - 4 << "\" text-anchor=\"middle\">step</text>\n";
    for (const Series* s : series) {
      if (s->points.empty()) continue;
      html << "<polyline fill=\"none\" stroke=\"" << s->color << "\" stroke-width=\"1.8\" points=\"";
      for (size_t i = 0; i < s->points.size(); ++i)
        html << (i ? " " : "") << text::printf_number("%.1f", px(s->points[i].first)) << ","
             << text::printf_number("%.1f", py(s->points[i].second));
      html << "\"><title>" << html_escape(s->name) << "</title></polyline>\n";
      // A single point draws no line: mark it, and mark sparse (eval) series.
      if (s->markers || s->points.size() == 1) {
        for (const auto& [x, y] : s->points)
          html << "<circle cx=\"" << text::printf_number("%.1f", px(x)) << "\" cy=\""
               << text::printf_number("%.1f", py(y)) << "\" r=\"3\" fill=\"" << s->color << "\"><title>"
               << html_escape(s->name) << " at step " << metric_value(x) << ": " << metric_value(y)
               << "</title></circle>\n";
      }
    }
    html << "</svg>\n";
  }
  html << "<div class=\"legend\">";
  for (const Series* s : series) {
    html << "<span><i style=\"background:" << s->color << "\"></i>" << html_escape(s->name) << " ("
         << s->points.size() << (s->points.size() == 1 ? " point" : " points") << ")</span>";
  }
  html << "</div>\n";
  for (const Series* s : series) {
    if (s->skipped > 0)
      html << "<p class=\"note\">" << html_escape(s->name) << ": " << s->skipped
           << " non-finite value(s) (NaN or inf) skipped.</p>\n";
  }
  html << "</section>\n";
  return html.str();
}

std::string confusion_table(const ReportInputs& in) {
  const auto& m = in.confusion;
  const size_t n = m.size();
  for (size_t i = 0; i < n; ++i)
    BERTH_CHECK(m[i].size() == n, "report confusion matrix: expected ", n, " x ", n,
                " counts ([true][predicted]), found ", m[i].size(), " in row ", i,
                ". Fix: pass one row and one column per label");
  auto label = [&](size_t i) { return i < in.labels.size() ? in.labels[i] : std::to_string(i); };
  std::ostringstream html;
  html << "<section><h2>Confusion matrix</h2>\n<p class=\"note\">Rows: true label; columns: predicted. "
          "Shading: the "
          "share of the row.</p>\n<table class=\"confusion\"><tr><th>true \\ predicted</th>";
  for (size_t j = 0; j < n; ++j) html << "<th>" << html_escape(label(j)) << "</th>";
  html << "<th>total</th><th>recall</th></tr>\n";
  int64_t correct = 0, total = 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t row = 0;
    for (int64_t count : m[i]) row += count;
    total += row;
    correct += m[i][i];
    html << "<tr><th>" << html_escape(label(i)) << "</th>";
    for (size_t j = 0; j < n; ++j) {
      const double share = row > 0 ? static_cast<double>(m[i][j]) / static_cast<double>(row) : 0;
      html << "<td style=\"background:rgba(31,119,180," << text::printf_number("%.3f", share) << ")"
           << (share > 0.55 ? ";color:#fff" : "") << "\"" << (i == j ? " class=\"diag\"" : "") << ">"
           << m[i][j] << "</td>";
    }
    html << "<td>" << row << "</td><td>"
         << (row > 0 ? text::printf_number("%.4f", static_cast<double>(m[i][i]) / static_cast<double>(row))
                     : "-")
         << "</td></tr>\n";
  }
  html << "</table>\n<p>Accuracy: "
       << (total > 0 ? text::printf_number("%.4f", static_cast<double>(correct) / total) : "-") << " ("
       << correct << " of " << total << ")</p>\n</section>\n";
  return html.str();
}

template <typename Map, typename Format>
std::string key_value_table(const std::string& title, const Map& values, Format format) {
  if (values.empty()) return "";
  std::ostringstream html;
  html << "<section><h2>" << html_escape(title) << "</h2>\n<table class=\"kv\">\n";
  for (const auto& [key, value] : values)
    html << "<tr><th>" << html_escape(key) << "</th><td>" << html_escape(format(value)) << "</td></tr>\n";
  html << "</table>\n</section>\n";
  return html.str();
}

constexpr const char* kStyle = R"(
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; margin: 2em auto;
       max-width: 1360px; padding: 0 1.5em; background: #fbfbfb; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1em; margin: .4em 0; }
.sub { color: #666; margin-top: 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 1.2em; }
.chart { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: .6em .8em; }
svg { width: 100%; height: auto; display: block; font-size: 11px; }
.grid { stroke: #eee; } .frame { fill: none; stroke: #bbb; } .tick, .axis { fill: #555; }
.legend span { margin-right: 1.2em; font-size: .9em; white-space: nowrap; }
.legend i { display: inline-block; width: 14px; height: 3px; margin: 0 5px 4px 0; vertical-align: middle; }
.note { color: #8a6d3b; font-size: .9em; margin: .3em 0; }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid #ddd; padding: .3em .7em; text-align: right; }
th { background: #f3f3f3; font-weight: 600; }
table.kv th { text-align: left; } table.kv td { text-align: left; font-family: ui-monospace, monospace; }
table.confusion td.diag { font-weight: 700; }
)";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

AxisTicks nice_ticks(double lo, double hi, int target, bool integer_steps) {
  BERTH_BUG(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, "axis range [", lo, ", ", hi, "]");
  if (hi == lo) {
    // One value: a range around it, so it sits mid-plot.
    const double pad = integer_steps ? 1 : (lo != 0 ? std::fabs(lo) * 0.1 : 1);
    lo -= pad;
    hi += pad;
  }
  AxisTicks ticks;
  const double range = nice_number(hi - lo, false);
  ticks.step = nice_number(range / std::max(1, target - 1), true);
  if (integer_steps) ticks.step = std::max(1.0, ticks.step);
  ticks.lo = std::floor(lo / ticks.step) * ticks.step;
  ticks.hi = std::ceil(hi / ticks.step) * ticks.step;
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(ticks.step))));
  const bool scientific = ticks.step < 1e-3 || std::max(std::fabs(ticks.lo), std::fabs(ticks.hi)) >= 1e7;
  const auto count = static_cast<int64_t>(std::llround((ticks.hi - ticks.lo) / ticks.step));
  for (int64_t i = 0; i <= count; ++i) {
    double value = ticks.lo + static_cast<double>(i) * ticks.step;
    if (std::fabs(value) < ticks.step * 1e-9) value = 0;  // no "-0" from rounding
    ticks.values.push_back(value);
    ticks.labels.push_back(scientific ? (value == 0 ? "0" : text::printf_number("%.3g", value))
                                      : text::printf_number("%.*f", decimals, value));
  }
  return ticks;
}

std::string render_training_report(const ReportInputs& in) {
  const auto& h = in.log_history;
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
       << html_escape(in.title.empty() ? "Training report" : in.title) << "</title>\n<style>" << kStyle
       << "</style>\n</head>\n<body>\n<h1>" << html_escape(in.title.empty() ? "Training report" : in.title)
       << "</h1>\n<p class=\"sub\">berth " << BERTH_VERSION << " &middot; " << h.size()
       << " log entries</p>\n";

  html << key_value_table("Final metrics", in.final_metrics, metric_value);

  html << "<h2>Training curves</h2>\n<div class=\"charts\">\n";
  html << chart("Loss", {series_of(h, "loss", "train loss", "#1f77b4", false),
                         series_of(h, "eval_loss", "eval loss", "#ff7f0e", true)});
  html << chart("Learning rate", {series_of(h, "learning_rate", "learning rate", "#2ca02c", false)});
  bool has_grad_norm = false;
  std::map<std::string, bool> metrics;  // the eval metrics logged, by name
  for (const auto& entry : h) {
    for (const auto& [key, value] : entry) {
      if (key == "grad_norm") has_grad_norm = true;
      // Timings are not model quality: they stay out of the metric plots.
      const bool timing =
          key == "eval_runtime" || key == "eval_samples_per_second" || key == "eval_steps_per_second";
      if (key.rfind("eval_", 0) == 0 && key != "eval_loss" && !timing) metrics[key] = true;
    }
  }
  if (has_grad_norm)
    html << chart("Gradient norm", {series_of(h, "grad_norm", "grad norm", "#8c564b", false)});
  static const char* const palette[] = {"#d62728", "#9467bd", "#17becf", "#bcbd22", "#e377c2"};
  size_t color = 0;
  for (const auto& [key, present] : metrics)
    html << chart(key, {series_of(h, key, key, palette[color++ % 5], true)});
  html << "</div>\n";
  if (metrics.empty()) html << "<p class=\"note\">No evaluation metrics were logged.</p>\n";

  if (!in.confusion.empty()) html << confusion_table(in);
  html << key_value_table("Run", in.run_info, [](const std::string& v) { return v; });
  html << "</body>\n</html>\n";
  return html.str();
}

void write_training_report(const std::string& path, const ReportInputs& inputs) {
  const std::string html = render_training_report(inputs);  // before the write: a bad input leaves no file
  write_file_atomically(path, html);
}

}  // namespace berth::train
