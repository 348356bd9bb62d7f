// Where `berth predict` writes its JSON lines: to --output whole (a temporary name, then renamed) or, with no
// --output, to the console; shared by every task's prediction.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

namespace berth::tasks {

// write(stream) puts one JSON object a line; with `output` set it goes to that file atomically and `log`
// gets "predict: <count> <things> -> <output>", else it goes to `out`, flushed.
void write_prediction_lines(const std::string& output, std::ostream& out, std::ostream& log, size_t count,
                            const std::string& things, const std::function<void(std::ostream&)>& write);

}  // namespace berth::tasks
