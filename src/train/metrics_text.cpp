// Metrics as console text.
#include "berth/train/metrics_text.h"

#include <algorithm>
#include <iomanip>
#include <ostream>
#include <sstream>

namespace berth::train {

void write_metrics(std::ostream& out, const std::string& title,
                   const std::map<std::string, double>& metrics) {
  out << "***** " << title << " *****\n";
  for (const auto& [name, value] : metrics)
    out << "  " << std::left << std::setw(28) << name << " = " << std::setprecision(4) << value << "\n";
  out << std::setprecision(6);
  out << std::right;
}

std::string format_confusion_table(const std::vector<std::vector<int64_t>>& confusion,
                                   const std::vector<std::string>& labels) {
  std::ostringstream out;
  size_t width = 9;
  for (const auto& label : labels) width = std::max(width, label.size() + 2);
  out << std::setw(static_cast<int>(width)) << "true\\pred";
  for (const auto& label : labels) out << std::setw(static_cast<int>(width)) << label;
  out << "\n";
  for (size_t r = 0; r < confusion.size(); ++r) {
    out << std::setw(static_cast<int>(width)) << (r < labels.size() ? labels[r] : std::to_string(r));
    for (int64_t count : confusion[r]) out << std::setw(static_cast<int>(width)) << count;
    out << "\n";
  }
  return out.str();
}

}  // namespace berth::train
