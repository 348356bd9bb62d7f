// Gathers berth doctor's checklist: versions, build features, BLAS and threads, CUDA, the launcher and the
// rank's device.
#include "berth/doctor/doctor.h"

#include <ATen/Context.h>
#include <torch/version.h>

#include <algorithm>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "berth/config.h"
#if BERTH_WITH_GLOO
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include "berth/core/error.h"
#include "berth/device/rank_device.h"
#include "berth/model/auto_model.h"
#include "berth/placement/inspect.h"
#include "berth/placement/place.h"
#include "core/text.h"

namespace berth {
namespace {

// libtorch does not export its dispatch query; its build string names the capability it uses.
std::string cpu_capability_name() {
  std::string config = at::show_config();
  const std::string key = "CPU capability usage: ";
  auto at = config.find(key);
  if (at == std::string::npos) return "unknown";
  auto start = at + key.size();
  return text::to_lower(config.substr(start, config.find('\n', start) - start));
}

// A compiled-in backend can still fail at run time (no usable network interface, say), so doctor runs
// a one-rank Gloo all-reduce over loopback: a few milliseconds, and proof rather than a build flag.
bool gloo_works(std::vector<std::string>& warnings) {
#if BERTH_WITH_GLOO
  try {
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(10));
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    c10d::ProcessGroupGloo group(c10::make_intrusive<c10d::HashStore>(), 0, 1, options);
    std::vector<at::Tensor> tensors{at::ones({4})};
    group.allreduce(tensors)->wait();
    return tensors[0].sum().item<float>() == 4.0f;
  } catch (const std::exception& e) {
    warnings.push_back(
        std::string("c10d Gloo is compiled in but a one-rank all-reduce on 127.0.0.1 failed: ") + e.what() +
        ". Fix: check that the loopback interface is up");
    return false;
  }
#else
  (void)warnings;
  return false;
#endif
}

bool built_with(const std::string& flag) { return at::show_config().find(flag + "=ON") != std::string::npos; }

std::string bytes_text(int64_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0)
      << " GiB";
  return out.str();
}

void add_thread_warnings(DoctorReport& report) {
  const auto& t = report.threads;
  int ranks_here = report.distributed ? report.distributed->local_world_size : 1;
  if (t.intra_op_threads * ranks_here > t.cpus_available) {
    report.warnings.push_back(
        detail::concat(ranks_here, " local rank(s) x ", t.intra_op_threads,
                       " intra-op threads = ", t.intra_op_threads * ranks_here, " threads on ",
                       t.cpus_available, " CPUs: oversubscribed cores slow every rank. Fix: --threads ",
                       std::max(1, t.cpus_available / ranks_here), " (CPUs / local ranks)"));
  }
  // libgomp's own start-up value decides, not the environment: a policy set after start does nothing.
  bool spinning = t.omp_spin_count ? *t.omp_spin_count > 0 : t.omp_wait_policy.value_or("") != "PASSIVE";
  if (spinning && t.intra_op_threads > 1 && t.blas_threads.value_or(1) > 1) {
    report.warnings.push_back(
        "OpenMP threads spin while idle (OMP_WAIT_POLICY=" + t.omp_wait_policy.value_or("unset") +
        (t.omp_spin_count ? ", spin count " + std::to_string(*t.omp_spin_count) : std::string()) +
        ") while OpenBLAS's own threads need the same cores (measured here: 0.45x throughput). Fix: export "
        "OMP_WAIT_POLICY=PASSIVE before the process starts (setting it inside the program is too late), or "
        "put "
        "BERTH_PROCESS_DEFAULTS() next to your main(); the berth command does this unless you set the "
        "variable");
  }
}

void add_blas_warnings(DoctorReport& report) {
  if (report.blas.kind == BlasInfo::Kind::Reference) {
    report.warnings.push_back("BLAS is the reference implementation (" + report.blas.library_path +
                              "): libtorch matmuls run about 18x slower than with OpenBLAS. Fix: apt-get "
                              "install libopenblas0-pthread "
                              "(or: update-alternatives --config libblas.so.3-x86_64-linux-gnu)");
  } else if (report.blas.kind == BlasInfo::Kind::None) {
    report.warnings.push_back(
        "no BLAS library is loaded in this process; libtorch falls back to its own slow matmuls. Fix: "
        "install "
        "libopenblas0-pthread");
  }
}

void add_cuda_warnings(DoctorReport& report) {
  const auto& cuda = report.cuda;
  if (!cuda.compiled && cuda.visible_devices) {
    report.warnings.push_back("CUDA_VISIBLE_DEVICES=" + *cuda.visible_devices +
                              " is set, but this libtorch has no CUDA: every rank runs on the CPU");
  }
  if (cuda.device_count > 1 && !cuda.device_order) {
    report.warnings.push_back(
        "CUDA_DEVICE_ORDER is unset: cuda:N may not be nvidia-smi's GPU N. Fix: export "
        "CUDA_DEVICE_ORDER=PCI_BUS_ID");
  }
}

}  // namespace

namespace {

// Loads the model as a fine-tuning run does (a sequence classifier from HF's files), places it on the
// run's device, and groups its tensors by device, dtype and kind.
DoctorModelReport inspect_model(const std::string& dir, c10::Device device) {
  Pretrained<std::shared_ptr<TaskModel>> loaded = load_task_model(dir);
  place(loaded.model->module(), device, PlacementPolicy::Move);
  DoctorModelReport report;
  report.dir = dir;
  report.architecture = loaded.model->info().architecture;
  report.load_warnings = loaded.report.warnings;
  for (const TensorInfo& t : inspect(loaded.model->module()).tensors) {
    int64_t elements = 1;
    for (int64_t d : t.shape) elements *= d;
    const std::string device_text = device_name(t.device), dtype = dtype_name(t.dtype);
    const std::string kind(to_string(t.kind));
    auto group =
        std::find_if(report.groups.begin(), report.groups.end(), [&](const DoctorModelReport::Group& g) {
          return g.device == device_text && g.dtype == dtype && g.kind == kind;
        });
    if (group == report.groups.end())
      group = report.groups.insert(report.groups.end(), {device_text, dtype, kind});
    group->tensors += 1;
    group->elements += elements;
    group->bytes += t.bytes;
    report.tensors += 1;
    report.elements += elements;
    report.bytes += t.bytes;
  }
  return report;
}

// "bf16 matmuls: AMX (granted), 1024^3 bf16 1150 GFLOP/s vs fp32 180 (6.4x): --bf16 ... computes faster
// here" (from measured matmuls, not the flags alone: AMX the kernel refuses is no faster).
std::string bf16_text(const Bf16Support& b) {
  std::ostringstream out;
  out << "bf16 matmuls: ";
  if (b.isa == "amx") out << "AMX (" << (b.amx_enabled ? "granted" : "not granted by the kernel") << ")";
  if (b.isa == "avx512_bf16") out << "AVX512_BF16";
  if (b.isa == "none") out << "no bf16 instructions (emulated)";
  const double ratio = b.fp32_gflops > 0 ? b.bf16_gflops / b.fp32_gflops : 0;
  out << std::fixed << std::setprecision(0) << ", " << b.matmul_n << "^3 bf16 " << b.bf16_gflops
      << " GFLOP/s vs fp32 " << b.fp32_gflops << std::setprecision(1) << " (" << ratio << "x): ";
  out << (ratio > 1.2 ? "--bf16 (train, eval, benchmark) computes faster here"
                      : "--bf16 gains nothing here; train in fp32");
  return out.str();
}

}  // namespace

DoctorReport run_doctor(const DoctorOptions& options) {
  DoctorReport report;
  report.berth_version = BERTH_VERSION;
  report.torch_version = TORCH_VERSION;
  report.features = {{"cuda", BERTH_WITH_CUDA != 0},        {"nccl", BERTH_WITH_NCCL != 0},
                     {"gloo", gloo_works(report.warnings)}, {"mpi", built_with("USE_MPI")},
                     {"onednn", at::hasMKLDNN()},           {"openmp", at::hasOpenMP()}};
  report.cpu_capability = cpu_capability_name();
  report.bf16 = query_bf16_support();
  report.blas = query_blas();
  report.threads = runtime::thread_state();
  report.cuda = query_cuda();
  report.device_order_advice = device_order_advice(report.cuda);

  try {
    report.distributed = detect_dist_env();
  } catch (const Error& e) {
    report.problems.push_back(e.what());
  }
  try {
    DeviceRequest request = parse_device(options.device);
    DistEnv env = report.distributed.value_or(DistEnv{});
    c10::Device device = device_for_rank(request, env, report.cuda, {options.allow_shared_device});
    if (report.distributed) report.device = device_name(device);
    if (!options.model_dir.empty()) report.model = inspect_model(options.model_dir, device);
  } catch (const Error& e) {
    report.problems.push_back(e.what());
  }
  add_thread_warnings(report);
  add_blas_warnings(report);
  add_cuda_warnings(report);
  return report;
}

std::string version_text() {
  const char* devices = BERTH_WITH_CUDA ? "CPU and CUDA" : "CPU only";
  return std::string("berth ") + BERTH_VERSION + " (built for torch " + TORCH_VERSION + ", " + devices + ")";
}

std::string format_doctor_text(const DoctorReport& report) {
  std::ostringstream out;
  auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  out << "berth doctor\n";
  out << "  berth " << report.berth_version << ", libtorch " << report.torch_version << "\n";
  out << "  features:";
  for (const auto& [name, on] : report.features) out << " " << name << "=" << yes_no(on);
  out << "\n  cpu kernels: " << report.cpu_capability << "\n";
  out << "  " << bf16_text(report.bf16) << "\n";
  out << "\nBLAS and threads\n";
  out << "  blas: " << to_string(report.blas.kind);
  if (!report.blas.library_path.empty()) out << " (" << report.blas.library_path << ")";
  if (!report.blas.config.empty()) out << " " << report.blas.config;
  out << "\n";
  out << "  cpus available: " << report.threads.cpus_available
      << ", intra-op threads: " << report.threads.intra_op_threads
      << ", inter-op threads: " << report.threads.interop_threads << ", blas threads: "
      << (report.threads.blas_threads ? std::to_string(*report.threads.blas_threads) : "unknown") << "\n";
  out << "  OMP_NUM_THREADS=" << report.threads.omp_num_threads.value_or("(unset)")
      << " OMP_WAIT_POLICY=" << report.threads.omp_wait_policy.value_or("(unset)")
      << " (OpenMP idle spin count: "
      << (report.threads.omp_spin_count ? std::to_string(*report.threads.omp_spin_count) : "unknown")
      << ")\n";
  out << "\nCUDA\n";
  out << "  compiled with CUDA: " << yes_no(report.cuda.compiled)
      << ", available: " << yes_no(report.cuda.available) << ", devices: " << report.cuda.device_count
      << "\n";
  for (const auto& d : report.cuda.devices) {
    out << "  cuda:" << d.index << "  " << d.name << "  " << bytes_text(d.total_memory_bytes) << "  sm_"
        << d.compute_major << d.compute_minor << "\n";
  }
  out << "  CUDA_VISIBLE_DEVICES=" << report.cuda.visible_devices.value_or("(unset)")
      << " CUDA_DEVICE_ORDER=" << report.cuda.device_order.value_or("(unset)") << "\n";
  out << "  " << report.device_order_advice << "\n";
  out << "\nDistributed\n";
  if (report.distributed) {
    const auto& d = *report.distributed;
    out << "  launcher: " << to_string(d.source) << ", rank " << d.rank << " of " << d.world_size
        << ", local rank " << d.local_rank << " of " << d.local_world_size;
    if (d.master_addr)
      out << ", master " << *d.master_addr << ":" << (d.master_port ? std::to_string(*d.master_port) : "?");
    out << "\n";
  } else {
    out << "  launcher: inconsistent (see problems)\n";
  }
  out << "  this rank's device: " << report.device.value_or("(none: see problems)") << "\n";
  if (report.model) {
    const DoctorModelReport& m = *report.model;
    out << "\nModel\n";
    out << "  " << m.dir << ": " << m.architecture << ", " << m.tensors << " tensors, " << m.elements
        << " elements, " << format_bytes(m.bytes) << "\n";
    for (const auto& g : m.groups)
      out << "  " << g.device << " " << g.dtype << " " << g.kind << "s: " << g.tensors << " tensors, "
          << format_bytes(g.bytes) << "\n";
    for (const auto& w : m.load_warnings) out << "  load: " << w << "\n";
  }
  if (!report.warnings.empty()) {
    out << "\nWarnings\n";
    for (const auto& w : report.warnings) out << "  - " << w << "\n";
  }
  if (!report.problems.empty()) {
    out << "\nProblems\n";
    for (const auto& p : report.problems) out << "  - " << p << "\n";
  } else {
    out << "\nNo problems found.\n";
  }
  return out.str();
}

std::string format_doctor_json(const DoctorReport& report) {
  using json = nlohmann::ordered_json;
  json features = json::object();
  for (const auto& [name, on] : report.features) features[name] = on;
  json devices = json::array();
  for (const auto& d : report.cuda.devices) {
    devices.push_back(
        {{"index", d.index},
         {"name", d.name},
         {"total_memory_bytes", d.total_memory_bytes},
         {"compute_capability", std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor)}});
  }
  auto optional_string = [](const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); };
  json distributed = nullptr;
  if (report.distributed) {
    const auto& d = *report.distributed;
    distributed = {{"rank", d.rank},
                   {"world_size", d.world_size},
                   {"local_rank", d.local_rank},
                   {"local_world_size", d.local_world_size},
                   {"source", to_string(d.source)},
                   {"master_addr", optional_string(d.master_addr)},
                   {"master_port", d.master_port ? json(*d.master_port) : json(nullptr)}};
  }
  json model = nullptr;
  if (report.model) {
    json groups = json::array();
    for (const auto& g : report.model->groups)
      groups.push_back({{"device", g.device},
                        {"dtype", g.dtype},
                        {"kind", g.kind},
                        {"tensors", g.tensors},
                        {"elements", g.elements},
                        {"bytes", g.bytes}});
    model = {{"dir", report.model->dir},
             {"architecture", report.model->architecture},
             {"tensors", report.model->tensors},
             {"elements", report.model->elements},
             {"bytes", report.model->bytes},
             {"groups", groups},
             {"load_warnings", report.model->load_warnings}};
  }
  json out = {
      {"berth_version", report.berth_version},
      {"torch_version", report.torch_version},
      {"features", features},
      {"cpu_capability", report.cpu_capability},
      {"bf16",
       {{"isa", report.bf16.isa},
        {"amx_enabled", report.bf16.amx_enabled},
        {"matmul_n", report.bf16.matmul_n},
        {"fp32_gflops", report.bf16.fp32_gflops},
        {"bf16_gflops", report.bf16.bf16_gflops}}},
      {"blas",
       {{"kind", to_string(report.blas.kind)},
        {"library", report.blas.library_path},
        {"config", report.blas.config},
        {"threads", report.blas.num_threads ? json(*report.blas.num_threads) : json(nullptr)}}},
      {"threads",
       {{"cpus_available", report.threads.cpus_available},
        {"intra_op", report.threads.intra_op_threads},
        {"interop", report.threads.interop_threads},
        {"blas", report.threads.blas_threads ? json(*report.threads.blas_threads) : json(nullptr)},
        {"omp_num_threads", optional_string(report.threads.omp_num_threads)},
        {"omp_wait_policy", optional_string(report.threads.omp_wait_policy)},
        {"omp_spin_count",
         report.threads.omp_spin_count ? json(*report.threads.omp_spin_count) : json(nullptr)}}},
      {"cuda",
       {{"compiled", report.cuda.compiled},
        {"available", report.cuda.available},
        {"device_count", report.cuda.device_count},
        {"devices", devices},
        {"visible_devices", optional_string(report.cuda.visible_devices)},
        {"device_order", optional_string(report.cuda.device_order)},
        {"device_order_advice", report.device_order_advice}}},
      {"distributed", distributed},
      {"device", optional_string(report.device)},
      {"model", model},
      {"warnings", report.warnings},
      {"problems", report.problems},
  };
  return out.dump(2);
}

}  // namespace berth
