// Finds the BLAS library that serves this process's matmuls: MKL linked into the PyPI torch's libtorch_cpu,
// or a system libblas.so.3 (Debian's is an alternative that may point at OpenBLAS or at the 18x slower
// reference implementation) under a torch built against it.
#include "berth/core/blas_info.h"

#include <dlfcn.h>

#include <filesystem>
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

BlasInfo::Kind kind_of_library(const std::string& path) {
  if (contains(path, "openblas")) return BlasInfo::Kind::OpenBLAS;
  if (contains(path, "mkl")) return BlasInfo::Kind::MKL;
  // Debian's reference BLAS lives in .../blas/libblas.so.3.
  if (contains(path, "/blas/libblas")) return BlasInfo::Kind::Reference;
  return BlasInfo::Kind::Unknown;
}

BlasInfo query_blas() {
  BlasInfo info;
  // Several BLAS libraries can be mapped at once (libtorch links libblas.so.3 and, through LAPACK,
  // OpenBLAS); what matters is the one that serves sgemm_, so ask the dynamic linker which that is.
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info where{};
  if (sgemm != nullptr && dladdr(sgemm, &where) != 0 && where.dli_fname != nullptr) {
    std::error_code ec;
    auto resolved = std::filesystem::canonical(where.dli_fname, ec);
    info.library_path = ec ? std::string(where.dli_fname) : resolved.string();
    info.kind = kind_of_library(info.library_path);
  }
  if (info.kind == BlasInfo::Kind::OpenBLAS || info.kind == BlasInfo::Kind::Unknown) {
    if (auto get_config = find_symbol<char* (*)()>("openblas_get_config")) {
      info.kind = BlasInfo::Kind::OpenBLAS;
      info.config = get_config();
      if (auto get_threads = find_symbol<int (*)()>("openblas_get_num_threads"))
        info.num_threads = get_threads();
    }
  }
  // The PyPI torch links MKL statically into libtorch_cpu.so: the library's name does not say so, its symbols
  // do.
  if (info.kind == BlasInfo::Kind::Unknown) {
    if (auto version = find_symbol<void (*)(char*, int)>("MKL_Get_Version_String")) {
      info.kind = BlasInfo::Kind::MKL;
      char text[256] = {};
      version(text, sizeof(text) - 1);
      info.config = text;
    }
  }
  if (info.kind == BlasInfo::Kind::MKL) {
    if (auto mkl_threads = find_symbol<int (*)()>("MKL_Get_Max_Threads")) info.num_threads = mkl_threads();
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
