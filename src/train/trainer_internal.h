// Small helpers the Trainer's source files share.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "berth/core/input_file.h"

namespace berth::data {
struct DataLoaderOptions;
}
namespace berth::dist {
class Communicator;
}

namespace berth::train::detail {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A file of a checkpoint the Trainer reads back (its absence means the checkpoint is incomplete).
inline std::string read_checkpoint_file(const std::string& path) {
  return read_input_file(
      path, "the checkpoint's file",
      "the checkpoint is incomplete: resume from another checkpoint (or \"latest\"), or start "
      "without --resume_from_checkpoint");
}

// A number as the console and report show it (operator<<'s shortest form).
inline std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// This rank's rows of an evaluation: the sampler's, unshuffled, padded to equal counts
// (trainer_evaluate.cpp).
std::vector<size_t> eval_rows(const data::DataLoaderOptions& options, size_t dataset_size);

// Every rank's per-token logits in dataset order: this rank's batches, (B, T_b, classes) each, padded to
// `length` with -100 as HF's evaluation loop pads them across batches (nested_concat's padding_index), then
// gathered: (rows, length, classes) (trainer_evaluate.cpp).
at::Tensor gather_token_logits(dist::Communicator& comm, const std::vector<size_t>& my_rows,
                               const std::vector<at::Tensor>& batches, int64_t rows, int64_t length,
                               int64_t classes);

}  // namespace berth::train::detail
