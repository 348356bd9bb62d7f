// `berth doctor`: the device and environment checklist users otherwise run by hand, as text or JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "berth/core/blas_info.h"
#include "berth/core/runtime.h"
#include "berth/device/device.h"
#include "berth/device/dist_env.h"
#include "berth/doctor/bf16_support.h"

namespace berth {

struct DoctorOptions {
  std::string device = "auto";  // the device to check, as a run would take it
  bool allow_shared_device = false;
  std::string model_dir;  // an HF model directory to load and place as a run would; empty: none
};

// Where a model's tensors sit after loading and placing it: one row per (device, dtype, kind).
struct DoctorModelReport {
  struct Group {
    std::string device;
    std::string dtype;
    std::string kind;  // "parameter" or "buffer"
    int64_t tensors = 0;
    int64_t elements = 0;
    int64_t bytes = 0;
  };
  std::string dir;
  std::string architecture;  // the class it was loaded as
  int64_t tensors = 0;
  int64_t elements = 0;
  int64_t bytes = 0;
  std::vector<Group> groups;
  std::vector<std::string> load_warnings;  // from_pretrained's findings: missing, unexpected keys
};

struct DoctorReport {
  std::string berth_version;
  std::string torch_version;
  std::vector<std::pair<std::string, bool>> features;  // cuda, nccl, gloo, mpi, onednn, openmp, in that order
  std::string cpu_capability;  // the kernels libtorch dispatches to: avx2, avx512, ...
  Bf16Support bf16;            // what --bf16 runs on: AMX, AVX512_BF16 or emulation, and a measured matmul
  BlasInfo blas;
  runtime::ThreadState threads;
  CudaInfo cuda;
  std::string device_order_advice;
  std::optional<DistEnv> distributed;      // absent when the launcher variables are inconsistent
  std::optional<std::string> device;       // the device this rank would use; absent when it cannot
  std::optional<DoctorModelReport> model;  // with --model, when it loaded
  std::vector<std::string> warnings;       // known traps: slow BLAS, oversubscribed cores, GPU numbering
  std::vector<std::string> problems;       // errors that would stop a run; the CLI exits 2 when any
};

// Collects everything; never throws for a bad environment or device (those become problems).
DoctorReport run_doctor(const DoctorOptions& options = {});

// `berth --version`: "berth 0.1.0 (built for torch 2.15.0, CPU and CUDA)" (or "CPU only"): the torch whose
// C++ ABI berth needs at run time.
std::string version_text();

// Human-readable checklist.
std::string format_doctor_text(const DoctorReport& report);

// One JSON object: berth_version, torch_version, features, blas, threads, cuda {available, device_count,
// devices, ...}, distributed {rank, world_size, local_rank, local_world_size, source}, device, model
// {dir, architecture, tensors, elements, bytes, groups [{device, dtype, kind, tensors, elements, bytes}],
// load_warnings} or null, warnings, problems.
std::string format_doctor_json(const DoctorReport& report);

}  // namespace berth
