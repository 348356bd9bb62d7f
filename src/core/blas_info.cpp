// Finds the BLAS library mapped into this process: Debian's libblas.so.3 is an alternative
// that may point at OpenBLAS or at the 18x slower reference implementation.
#include "berth/core/blas_info.h"

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace berth {
namespace {

template <typename Fn>
Fn find_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

bool contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

std::string to_string(BlasInfo::Kind kind) {
  switch (kind) {
    case BlasInfo::Kind::OpenBLAS:
      return "openblas";
    case BlasInfo::Kind::MKL:
      return "mkl";
    case BlasInfo::Kind::Reference:
      return "reference";
    case BlasInfo::Kind::Unknown:
      return "unknown";
    case BlasInfo::Kind::None:
      return "none";
  }
  return "unknown";
}

BlasInfo query_blas() {
  BlasInfo info;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    std::string file = std::filesystem::path(path).filename().string();
    bool blas_like = contains(file, "blas") || contains(file, "mkl_rt") || contains(file, "mkl_core");
    if (!blas_like || contains(file, "cublas")) continue;
    std::error_code ec;
    auto resolved = std::filesystem::canonical(path, ec);
    info.library_path = ec ? path : resolved.string();
    if (contains(info.library_path, "openblas")) {
      info.kind = BlasInfo::Kind::OpenBLAS;
      break;  // the strongest answer; keep scanning only for weaker ones
    }
    if (contains(info.library_path, "mkl")) {
      info.kind = BlasInfo::Kind::MKL;
    } else if (info.kind == BlasInfo::Kind::None) {
      // Debian's reference BLAS lives in .../blas/libblas.so.3; a libblas we cannot name stays unknown.
      info.kind =
          contains(info.library_path, "/blas/libblas") ? BlasInfo::Kind::Reference : BlasInfo::Kind::Unknown;
    }
  }
  // Symbols are the ground truth: an OpenBLAS linked under another name still answers.
  if (auto get_config = find_symbol<char* (*)()>("openblas_get_config")) {
    info.kind = BlasInfo::Kind::OpenBLAS;
    info.config = get_config();
    if (auto get_threads = find_symbol<int (*)()>("openblas_get_num_threads"))
      info.num_threads = get_threads();
  } else if (auto mkl_threads = find_symbol<int (*)()>("MKL_Get_Max_Threads")) {
    info.kind = BlasInfo::Kind::MKL;
    info.num_threads = mkl_threads();
  }
  return info;
}

bool set_blas_threads(int threads) {
  if (auto set = find_symbol<void (*)(int)>("openblas_set_num_threads")) {
    set(threads);
    return true;
  }
  if (auto set = find_symbol<void (*)(int)>("MKL_Set_Num_Threads")) {
    set(threads);
    return true;
  }
  return false;
}

}  // namespace berth
