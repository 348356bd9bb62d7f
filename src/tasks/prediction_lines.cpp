// write_prediction_lines: a prediction's JSON lines to --output atomically, or to the console.
#include "tasks/prediction_lines.h"

#include "berth/core/atomic_file.h"

namespace berth::tasks {

void write_prediction_lines(const std::string& output, std::ostream& out, std::ostream& log, size_t count,
                            const std::string& things, const std::function<void(std::ostream&)>& write) {
  if (output.empty()) {
    write(out);
    out.flush();
    return;
  }
  write_file_atomically(output, write);
  log << "predict: " << count << " " << things << " -> " << output << "\n";
}

}  // namespace berth::tasks
