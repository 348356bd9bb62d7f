// Metrics as the console shows them: HF's "***** eval metrics *****" block and a confusion matrix table.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace berth::train {

// "***** title *****" and one "  name = value" line per metric (4 significant digits).
void write_metrics(std::ostream& out, const std::string& title, const std::map<std::string, double>& metrics);
// confusion[true][predicted] with the labels as row and column heads (a row's number when it has no label).
std::string format_confusion_table(const std::vector<std::vector<int64_t>>& confusion,
                                   const std::vector<std::string>& labels);

}  // namespace berth::train
