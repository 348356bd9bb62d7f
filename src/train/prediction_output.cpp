// write_prediction_lines: a prediction's JSON lines to --output atomically, or to the console.
#include "train/prediction_output.h"

#include "berth/core/atomic_file.h"

namespace berth::train {

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

}  // namespace berth::train
