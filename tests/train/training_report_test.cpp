// report.html: self-contained, escaped, one polyline point per logged value, confusion counts, nice ticks.
#include "berth/train/training_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "support/test_support.h"

using berth::testing::contains;
using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;

namespace berth::train {
namespace {

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// HF-like history: a train entry every 10 steps, an eval entry every 50.
std::vector<std::map<std::string, double>> history(int steps) {
  std::vector<std::map<std::string, double>> h;
  for (int step = 10; step <= steps; step += 10) {
    h.push_back({{"step", step},
                 {"loss", 2.0 / step},
                 {"learning_rate", 5e-5 * (1 - step / 1000.0)},
                 {"grad_norm", 1.5},
                 {"epoch", step / 100.0}});
    if (step % 50 == 0)
      h.push_back({{"step", step},
                   {"eval_loss", 3.0 / step},
                   {"eval_accuracy", 0.5 + step / 1000.0},
                   {"eval_f1", 0.4 + step / 1000.0},
                   {"eval_runtime", 1.2},
                   {"epoch", step / 100.0}});
  }
  return h;
}

// The points attribute of the polyline titled `name`, split on spaces.
size_t polyline_points(const std::string& html, const std::string& name) {
  const std::regex re("<polyline[^>]*points=\"([^\"]*)\"><title>" + name + "</title>");
  std::smatch m;
  if (!std::regex_search(html, m, re)) return 0;
  std::istringstream points(m[1].str());
  size_t n = 0;
  for (std::string p; points >> p;) ++n;
  return n;
}

TEST(TrainingReport, OnePolylinePointPerLoggedValue) {
  ReportInputs in;
  in.title = "spam classifier";
  in.log_history = history(200);
  const std::string html = render_training_report(in);
  EXPECT_EQ(polyline_points(html, "train loss"), 20u);
  EXPECT_EQ(polyline_points(html, "eval loss"), 4u);
  EXPECT_EQ(polyline_points(html, "learning rate"), 20u);
  EXPECT_EQ(polyline_points(html, "grad norm"), 20u);
  EXPECT_EQ(polyline_points(html, "eval_accuracy"), 4u);
  EXPECT_EQ(polyline_points(html, "eval_f1"), 4u);
  EXPECT_EQ(polyline_points(html, "eval_runtime"), 0u);  // timings are not plotted as metrics
  // Loss and eval loss share one chart (the same axes).
  const size_t loss_chart = html.find("<h3>Loss</h3>");
  const size_t lr_chart = html.find("<h3>Learning rate</h3>");
  ASSERT_LT(loss_chart, lr_chart);
  const std::string loss_section = html.substr(loss_chart, lr_chart - loss_chart);
  EXPECT_EQ(count_of(loss_section, "<svg"), 1u);
  EXPECT_EQ(count_of(loss_section, "<polyline"), 2u);
}

TEST(TrainingReport, IsSelfContainedAndWellFormedEnough) {
  ReportInputs in;
  in.title = "run";
  in.log_history = history(100);
  in.labels = {"ham", "spam"};
  in.confusion = {{90, 3}, {7, 40}};
  in.run_info = {{"model", "bert-tiny"}};
  const std::string html = render_training_report(in);
  EXPECT_EQ(count_of(html, "<svg"), count_of(html, "</svg>"));
  EXPECT_EQ(count_of(html, "<svg"), 5u);  // loss, lr, grad norm, eval_accuracy, eval_f1
  EXPECT_EQ(count_of(html, "<table"), count_of(html, "</table>"));
  EXPECT_EQ(count_of(html, "<section"), count_of(html, "</section>"));
  EXPECT_EQ(count_of(html, "http://"), count_of(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(count_of(html, "https://"), 0u);
  EXPECT_EQ(count_of(html, "<script"), 0u);
  EXPECT_EQ(count_of(html, "<link"), 0u);
  EXPECT_EQ(count_of(html, "url("), 0u);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  expect_contains(html, {"</html>\n"});
}

TEST(TrainingReport, EscapesEveryString) {
  ReportInputs in;
  in.title = "<b>title</b>";
  in.labels = {"<script>alert(1)</script>", "a&b"};
  in.confusion = {{1, 0}, {0, 1}};
  in.final_metrics = {{"test_<acc>", 0.5}};
  in.run_info = {{"data", "\"quoted\" 'single'"}};
  const std::string html = render_training_report(in);
  EXPECT_FALSE(contains(html, "<script"));
  EXPECT_FALSE(contains(html, "<b>title"));
  expect_contains(html, {"&lt;script&gt;alert(1)&lt;/script&gt;", "a&amp;b", "&lt;b&gt;title&lt;/b&gt;",
                         "test_&lt;acc&gt;", "&quot;quoted&quot; &#39;single&#39;"});
}

TEST(TrainingReport, ConfusionCountsTotalsAndRecallAppear) {
  ReportInputs in;
  in.labels = {"ham", "spam", "phish"};
  in.confusion = {{812, 5, 3}, {17, 391, 0}, {2, 9, 61}};
  const std::string html = render_training_report(in);
  for (const auto& row : in.confusion)
    for (int64_t value : row) expect_contains(html, {">" + std::to_string(value) + "</td>"});
  // Row totals, the recall of "spam" (391 / 408) and the accuracy (1264 of 1300).
  expect_contains(
      html, {"<td>820</td>", "<td>408</td>", "<td>72</td>", "0.9583", "(1264 of 1300)", "<th>phish</th>"});
}

TEST(TrainingReport, ANonSquareConfusionIsRefused) {
  ReportInputs in;
  in.confusion = {{1, 2}, {3}};
  expect_contains(error_text([&] { render_training_report(in); }),
                  {"expected 2 x 2", "found 1 in row 1", "Fix:"});
}

TEST(TrainingReport, SinglePointsNoEvalsAndNonFiniteLosses) {
  ReportInputs in;
  in.log_history = {{{"step", 1}, {"loss", 0.7}, {"learning_rate", 1e-4}},
                    {{"step", 2}, {"loss", NAN}, {"learning_rate", 9e-5}},
                    {{"step", 3}, {"loss", INFINITY}, {"learning_rate", 8e-5}}};
  const std::string html = render_training_report(in);
  EXPECT_EQ(polyline_points(html, "train loss"), 1u);
  EXPECT_EQ(polyline_points(html, "learning rate"), 3u);
  expect_contains(html, {"train loss: 2 non-finite value(s) (NaN or inf) skipped",
                         "No evaluation metrics were logged", "<circle"});
  EXPECT_FALSE(contains(html, "nan\""));
  EXPECT_FALSE(contains(html, "inf\""));

  ReportInputs empty;
  const std::string bare = render_training_report(empty);
  expect_contains(bare, {"Training report", "No finite values were logged"});
  EXPECT_EQ(count_of(bare, "<svg"), 0u);
}

TEST(TrainingReport, NiceTicksCoverTheRangeInSteppedRoundNumbers) {
  const std::vector<std::pair<double, double>> ranges{{0, 1},     {0.2143, 2.31}, {3e-6, 5e-5},
                                                      {10, 1000}, {-3.5, 12.25},  {0.91, 0.93},
                                                      {7, 7},     {0, 0},         {1e7, 3e8}};
  for (const auto& [lo, hi] : ranges) {
    const AxisTicks t = nice_ticks(lo, hi);
    SCOPED_TRACE(std::to_string(lo) + ".." + std::to_string(hi));
    EXPECT_LE(t.lo, lo);
    EXPECT_GE(t.hi, hi);
    EXPECT_LT(t.lo, t.hi);
    EXPECT_GE(t.values.size(), 3u);
    EXPECT_LE(t.values.size(), 11u);
    // The step is 1, 2 or 5 times a power of ten.
    const double mantissa = t.step / std::pow(10.0, std::floor(std::log10(t.step)));
    EXPECT_TRUE(std::fabs(mantissa - 1) < 1e-9 || std::fabs(mantissa - 2) < 1e-9 ||
                std::fabs(mantissa - 5) < 1e-9)
        << mantissa;
    // Distinct labels, every tick a multiple of the step.
    EXPECT_EQ(std::set<std::string>(t.labels.begin(), t.labels.end()).size(), t.labels.size());
    for (double v : t.values) EXPECT_NEAR(std::remainder(v, t.step), 0, t.step * 1e-6);
  }
  EXPECT_EQ(nice_ticks(0, 1).labels, (std::vector<std::string>{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}));
  EXPECT_EQ(nice_ticks(10, 1000, 6, true).labels,
            (std::vector<std::string>{"0", "200", "400", "600", "800", "1000"}));
  EXPECT_EQ(nice_ticks(1, 3, 6, true).step, 1);  // training steps: never half a step
}

TEST(TrainingReport, WritesTheFileAtomically) {
  TempDir dir;
  ReportInputs in;
  in.log_history = history(50);
  write_training_report(dir.file("report.html"), in);
  std::ifstream file(dir.file("report.html"));
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(), render_training_report(in));
  in.confusion = {{1}, {2}};
  EXPECT_THROW(write_training_report(dir.file("bad.html"), in), berth::Error);
  EXPECT_FALSE(std::ifstream(dir.file("bad.html")).good());
}

}  // namespace
}  // namespace berth::train
