// query_bf16_support: the CPU's bf16 instructions as torch's cpuinfo reports them, whether AMX is granted,
// and a measured bf16 vs fp32 matmul (oneDNN picks AMX or AVX512_BF16 for bf16 when the CPU has them).
#include "berth/doctor/bf16_support.h"

#include <ATen/ATen.h>
#include <ATen/cpu/Utils.h>

#include <algorithm>
#include <chrono>

namespace berth {
namespace {

bool has_capability(const std::unordered_map<std::string, c10::IValue>& capabilities, const char* name) {
  const auto it = capabilities.find(name);
  return it != capabilities.end() && it->second.isBool() && it->second.toBool();
}

// Best GFLOP/s of `reps` n x n x n matmuls in `dtype` (one untimed first).
double matmul_gflops(int64_t n, c10::ScalarType dtype, int reps) {
  const at::Tensor a = at::randn({n, n}).to(dtype), b = at::randn({n, n}).to(dtype);
  at::Tensor c = at::mm(a, b);
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    c = at::mm(a, b);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * static_cast<double>(n * n * n) / seconds * 1e-9);
  }
  return best;
}

}  // namespace

Bf16Support query_bf16_support() {
  Bf16Support out;
  const auto capabilities = at::cpu::get_cpu_capabilities();
  if (has_capability(capabilities, "amx_bf16") && has_capability(capabilities, "amx_tile")) {
    out.isa = "amx";
    out.amx_enabled = at::cpu::init_amx();
  } else if (has_capability(capabilities, "avx512_bf16")) {
    out.isa = "avx512_bf16";
  }
  out.matmul_n = 1024;
  out.fp32_gflops = matmul_gflops(out.matmul_n, at::kFloat, 3);
  out.bf16_gflops = matmul_gflops(out.matmul_n, at::kBFloat16, 3);
  return out;
}

}  // namespace berth
