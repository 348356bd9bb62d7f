// What this CPU offers bf16 matmuls (AMX tiles, AVX512_BF16, or nothing: emulation slower than fp32), and a
// measured bf16 vs fp32 matmul through torch, for berth doctor and the benchmarks.
#pragma once

#include <cstdint>
#include <string>

namespace berth {

struct Bf16Support {
  std::string isa = "none";  // "amx" (amx_bf16 tiles), "avx512_bf16", or "none"
  bool amx_enabled = false;  // the kernel granted this process the AMX tile state (torch's init_amx)
  int64_t matmul_n = 0;      // the n of the n x n x n matmuls timed
  double fp32_gflops = 0;    // best of a few, on the current intra-op threads
  double bf16_gflops = 0;
};

// Queries the CPU (torch's cpuinfo) and times one small fp32 and bf16 matmul each (tens of milliseconds).
Bf16Support query_bf16_support();

}  // namespace berth
