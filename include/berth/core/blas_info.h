// Which BLAS library this process actually loaded, and its thread count.
#pragma once

#include <optional>
#include <string>

namespace berth {

struct BlasInfo {
  enum class Kind { OpenBLAS, MKL, Reference, Unknown, None };
  Kind kind = Kind::None;
  std::string library_path;        // the resolved file mapped into this process
  std::string config;              // openblas_get_config() / vendor string, when available
  std::optional<int> num_threads;  // BLAS's own thread pool size, when it can be read
};

// "openblas", "mkl", "reference", "unknown", "none".
std::string to_string(BlasInfo::Kind kind);

// Asks the dynamic linker which library serves sgemm_, then that library's own query functions.
BlasInfo query_blas();

// Sets BLAS's own thread pool size; returns false when the loaded BLAS has no such knob.
bool set_blas_threads(int threads);

}  // namespace berth
