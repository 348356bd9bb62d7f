// Communicators over c10d (Gloo, NCCL, MPI): rendezvous that names missing ranks, collectives whose failures
// name the operation, the ranks and the fix, and a heartbeat that tells a dead rank from a stuck one.
#include "berth/dist/communicator.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#ifdef USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#ifdef USE_C10D_MPI
#include <torch/csrc/distributed/c10d/ProcessGroupMPI.hpp>
#endif
#include <torch/version.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "berth/core/compat.h"
#include "berth/core/error.h"
#include "core/text.h"

namespace berth::dist {
namespace {

using Millis = std::chrono::milliseconds;

constexpr Millis kHeartbeatPeriod{500};
// How long a failed collective watches the heartbeats before naming the ranks that stopped.
constexpr Millis kHeartbeatWatch{1600};

std::string seconds_text(Millis d) {
  std::ostringstream out;
  const double s = static_cast<double>(d.count()) / 1000.0;
  if (s == std::floor(s)) {
    out << static_cast<long long>(s) << " s";
  } else {
    out << s << " s";
  }
  return out.str();
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string join_ints(const std::vector<int>& values) {
  std::vector<std::string> parts;
  for (int v : values) parts.push_back(std::to_string(v));
  return join(parts, ", ");
}

// c10::Error's what() carries a C++ backtrace in 1.13; users need only the message.
// Trailing dots and spaces go, since berth's sentence continues after it.
std::string message_of(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  while (!text.empty() && (text.back() == '.' || text.back() == ' ' || text.back() == '\n')) text.pop_back();
  return text;
}

std::string bytes_to_string(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}
std::vector<uint8_t> string_to_bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

std::string this_host() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

std::optional<std::string> getenv_string(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// ---------------------------------------------------------------------------------------------------------
// Local: one process.

class NoWork : public PendingWork {
 public:
  void wait() override {}
};

class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string backend_name() const override { return "local"; }
  void all_reduce_sum(std::vector<at::Tensor>&, const std::string&) override {}
  std::unique_ptr<PendingWork> all_reduce_sum_async(std::vector<at::Tensor>&, const std::string&) override {
    return std::make_unique<NoWork>();
  }
  void broadcast(std::vector<at::Tensor>&, int root, const std::string& what) override {
    check_root(root, what);
  }
  void barrier(const std::string&) override {}
  std::vector<std::string> all_gather_string(const std::string& value, const std::string&) override {
    return {value};
  }
  std::string broadcast_string(const std::string& value, int root, const std::string& what) override {
    check_root(root, what);
    return value;
  }

 private:
  static void check_root(int root, const std::string& what) {
    BERTH_CHECK(root == 0, what, ": broadcast root ", root,
                " does not exist in a 1-process run (rank 0 of 1)");
  }
};

// ---------------------------------------------------------------------------------------------------------
// c10d.

// What a failed collective was, for the message every rank's log will show.
struct FailureContext {
  std::string what;
  int rank;
  int world;
  std::string backend;
  Millis timeout;
};

class Heartbeat;

[[noreturn]] void throw_collective_failure(const FailureContext& ctx, const std::string& original,
                                           const std::string& diagnosis) {
  const std::string lower = text::to_lower(original);
  const bool timed_out = lower.find("timeout") != std::string::npos ||
                         lower.find("timed out") != std::string::npos ||
                         lower.find("deadline") != std::string::npos;
  const bool peer_lost = lower.find("connection closed") != std::string::npos ||
                         lower.find("connection reset") != std::string::npos ||
                         lower.find("broken pipe") != std::string::npos ||
                         lower.find("connection refused") != std::string::npos ||
                         lower.find("closed by peer") != std::string::npos;
  std::string kind;
  if (timed_out) {
    kind = "timed out after " + seconds_text(ctx.timeout);
  } else if (peer_lost) {
    kind = "failed: a peer was lost (its connection closed)";
  } else {
    kind = "failed";
  }
  BERTH_FAIL(
      ctx.what, " ", kind, " on rank ", ctx.rank, " of ", ctx.world, " (", ctx.backend, "). ",
      diagnosis.empty() ? "" : diagnosis + " ", "c10d said: ", original,
      ". Fix: another rank probably died or is stuck: check its log; raise BERTH_DIST_TIMEOUT (seconds, now ",
      seconds_text(ctx.timeout), ") if a step is legitimately slow.");
}

// Each rank bumps its counter in the store every kHeartbeatPeriod; after a failure, counters that stop moving
// name the ranks that died, where a timeout alone cannot tell a dead rank from one that never came.
class Heartbeat {
 public:
  Heartbeat(c10::intrusive_ptr<c10d::Store> store, int rank, int world)
      : store_(std::move(store)), rank_(rank), world_(world) {
    beat();
    thread_ = std::thread([this] { run(); });
  }
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // A sentence for the error: which ranks stopped beating, or that all others are alive.
  std::string diagnose() const {
    try {
      const std::vector<int64_t> before = read_all();
      std::this_thread::sleep_for(kHeartbeatWatch);
      const std::vector<int64_t> after = read_all();
      std::vector<int> stopped;
      for (int r = 0; r < world_; ++r)
        if (r != rank_ && after[r] == before[r]) stopped.push_back(r);
      if (stopped.empty())
        return "Every other rank is still alive (heartbeats in the store), so one of them did not reach this "
               "operation: it is stuck or took a different path.";
      return std::string(stopped.size() == 1 ? "Rank " : "Ranks ") + join_ints(stopped) +
             (stopped.size() == 1 ? " has" : " have") + " stopped its heartbeat for " +
             seconds_text(kHeartbeatWatch) + ": it probably crashed or was killed.";
    } catch (const std::exception& e) {
      return "The rendezvous store (hosted by rank 0) cannot be reached either (" + message_of(e) +
             "): rank 0 probably died.";
    }
  }

 private:
  std::string key(int r) const { return "heartbeat/" + std::to_string(r); }

  void beat() {
    try {
      store_->add(key(rank_), 1);
    } catch (const std::exception&) {
      // The store's host is gone; the next collective reports it.
    }
  }

  std::vector<int64_t> read_all() const {
    std::vector<int64_t> counts;
    for (int r = 0; r < world_; ++r) counts.push_back(store_->add(key(r), 0));
    return counts;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!cv_.wait_for(lock, kHeartbeatPeriod, [this] { return stop_; })) {
      lock.unlock();
      beat();
      lock.lock();
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int world_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
};

struct Shared {
  FailureContext ctx;
  std::unique_ptr<Heartbeat> heartbeat;

  [[noreturn]] void fail(const std::string& what, const std::exception& e) const {
    FailureContext c = ctx;
    c.what = what;
    throw_collective_failure(c, message_of(e), ctx.world > 1 && heartbeat ? heartbeat->diagnose() : "");
  }
};

// Several tensors travel as one flat buffer: c10d's list arguments mean one tensor per device, not a bucket.
bool needs_flattening(const std::vector<at::Tensor>& tensors) {
  return tensors.size() != 1 || !tensors[0].is_contiguous();
}

at::Tensor flatten(const std::vector<at::Tensor>& tensors, const std::string& what) {
  BERTH_CHECK(!tensors.empty(), what, ": no tensors given");
  for (const at::Tensor& t : tensors) {
    BERTH_CHECK(t.scalar_type() == tensors[0].scalar_type() && t.device() == tensors[0].device(), what,
                ": all tensors of one collective must share dtype and device; found ",
                tensors[0].scalar_type(), " on ", tensors[0].device(), " and ", t.scalar_type(), " on ",
                t.device());
  }
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

void unflatten(const at::Tensor& flat, std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (at::Tensor& t : tensors) {
    const int64_t n = t.numel();
    t.copy_(flat.narrow(0, offset, n).view(t.sizes()));
    offset += n;
  }
}

class C10dWork : public PendingWork {
 public:
  C10dWork(std::shared_ptr<const Shared> shared, c10::intrusive_ptr<c10d::Work> work, std::string what,
           at::Tensor flat, std::vector<at::Tensor> targets)
      : shared_(std::move(shared)),
        work_(std::move(work)),
        what_(std::move(what)),
        flat_(std::move(flat)),
        targets_(std::move(targets)) {}

  void wait() override {
    if (!work_) return;
    try {
      work_->wait();
    } catch (const std::exception& e) {
      work_.reset();
      shared_->fail(what_, e);
    }
    work_.reset();
    if (flat_.defined()) unflatten(flat_, targets_);
  }

 private:
  std::shared_ptr<const Shared> shared_;
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
  at::Tensor flat_;
  std::vector<at::Tensor> targets_;
};

class C10dCommunicator : public Communicator {
 public:
  C10dCommunicator(c10::intrusive_ptr<compat::C10dBackend> group, c10::intrusive_ptr<c10d::Store> store,
                   int rank, int world, std::string backend, c10::Device device, Millis timeout)
      : group_(std::move(group)), device_(device) {
    auto shared = std::make_shared<Shared>();
    shared->ctx = FailureContext{"", rank, world, backend, timeout};
    if (world > 1) shared->heartbeat = std::make_unique<Heartbeat>(std::move(store), rank, world);
    shared_ = std::move(shared);
  }

  ~C10dCommunicator() override {
    // The heartbeat stops before the group goes, so a clean exit never reads as a crash for long.
    shared_.reset();
  }

  int rank() const override { return shared_->ctx.rank; }
  int world_size() const override { return shared_->ctx.world; }
  std::string backend_name() const override { return shared_->ctx.backend; }
  c10::Device device() const override { return device_; }

  void all_reduce_sum(std::vector<at::Tensor>& tensors, const std::string& what) override {
    all_reduce_sum_async(tensors, what)->wait();
  }

  std::unique_ptr<PendingWork> all_reduce_sum_async(std::vector<at::Tensor>& tensors,
                                                    const std::string& what) override {
    const bool flat_path = needs_flattening(tensors);
    at::Tensor flat = flat_path ? flatten(tensors, what) : at::Tensor();
    std::vector<at::Tensor> args = flat_path ? std::vector<at::Tensor>{flat} : tensors;
    c10::intrusive_ptr<c10d::Work> work;
    try {
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      work = group_->allreduce(args, opts);
    } catch (const std::exception& e) {
      shared_->fail(what, e);
    }
    return std::make_unique<C10dWork>(shared_, std::move(work), what, flat,
                                      flat_path ? tensors : std::vector<at::Tensor>{});
  }

  void broadcast(std::vector<at::Tensor>& tensors, int root, const std::string& what) override {
    check_root(root, what);
    const bool flat_path = needs_flattening(tensors);
    at::Tensor flat = flat_path ? flatten(tensors, what) : at::Tensor();
    std::vector<at::Tensor> args = flat_path ? std::vector<at::Tensor>{flat} : tensors;
    c10::intrusive_ptr<c10d::Work> work;
    try {
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      work = group_->broadcast(args, opts);
    } catch (const std::exception& e) {
      shared_->fail(what, e);
    }
    C10dWork(shared_, std::move(work), what, flat, flat_path ? tensors : std::vector<at::Tensor>{}).wait();
  }

  void barrier(const std::string& what) override {
    // A one-element all-reduce rather than c10d's barrier: NCCL's barrier guesses a GPU from the rank, and
    // Gloo's gives the same guarantee at the same cost.
    std::vector<at::Tensor> token{at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device_))};
    all_reduce_sum(token, what);
  }

  std::vector<std::string> all_gather_string(const std::string& value, const std::string& what) override {
    const int world = world_size();
    // Lengths first (allgather needs equal sizes), then the bytes padded to the longest.
    std::vector<at::Tensor> lengths{at::zeros({world}, at::TensorOptions().dtype(at::kLong).device(device_))};
    lengths[0][rank()].fill_(static_cast<int64_t>(value.size()));
    all_reduce_sum(lengths, what + " (string lengths)");
    const at::Tensor cpu_lengths = lengths[0].cpu();
    const int64_t* len = cpu_lengths.data_ptr<int64_t>();
    const int64_t longest = std::max<int64_t>(1, *std::max_element(len, len + world));

    at::Tensor mine = at::zeros({longest}, at::TensorOptions().dtype(at::kByte));
    std::copy(value.begin(), value.end(), mine.data_ptr<uint8_t>());
    std::vector<at::Tensor> inputs{mine.to(device_)};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < world; ++r) outputs[0].push_back(at::empty_like(inputs[0]));
    try {
      auto work = group_->allgather(outputs, inputs);
      work->wait();
    } catch (const std::exception& e) {
      shared_->fail(what, e);
    }
    std::vector<std::string> result;
    for (int r = 0; r < world; ++r) {
      const at::Tensor bytes = outputs[0][r].cpu();
      const auto* p = reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>());
      result.emplace_back(p, static_cast<size_t>(len[r]));
    }
    return result;
  }

  std::unique_ptr<PendingWork> reduce_sum_async(at::Tensor& tensor, int root,
                                                const std::string& what) override {
    check_root(root, what);
    BERTH_CHECK(tensor.is_contiguous(), what, ": reduce needs a contiguous tensor");
    std::vector<at::Tensor> args{tensor};
    c10::intrusive_ptr<c10d::Work> work;
    try {
      c10d::ReduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      opts.rootRank = root;
      work = group_->reduce(args, opts);
    } catch (const std::exception& e) {
      shared_->fail(what, e);
    }
    return std::make_unique<C10dWork>(shared_, std::move(work), what, at::Tensor(),
                                      std::vector<at::Tensor>{});
  }

  void all_gather(const at::Tensor& input, std::vector<at::Tensor>& outputs,
                  const std::string& what) override {
    BERTH_CHECK(static_cast<int>(outputs.size()) == world_size(), what, ": all_gather needs ", world_size(),
                " outputs, found ", outputs.size());
    std::vector<at::Tensor> inputs{input.contiguous()};
    std::vector<std::vector<at::Tensor>> lists(1);
    for (const at::Tensor& out : outputs) lists[0].push_back(at::empty_like(inputs[0]));
    try {
      auto work = group_->allgather(lists, inputs);
      work->wait();
    } catch (const std::exception& e) {
      shared_->fail(what, e);
    }
    for (size_t r = 0; r < outputs.size(); ++r) outputs[r].copy_(lists[0][r].view(outputs[r].sizes()));
  }

  std::string broadcast_string(const std::string& value, int root, const std::string& what) override {
    check_root(root, what);
    std::vector<at::Tensor> length{at::full({1}, rank() == root ? static_cast<int64_t>(value.size()) : 0,
                                            at::TensorOptions().dtype(at::kLong).device(device_))};
    broadcast(length, root, what + " (string length)");
    const int64_t n = length[0].cpu().item<int64_t>();
    if (n == 0) return "";
    at::Tensor bytes = at::zeros({n}, at::TensorOptions().dtype(at::kByte));
    if (rank() == root) std::copy(value.begin(), value.end(), bytes.data_ptr<uint8_t>());
    std::vector<at::Tensor> args{bytes.to(device_)};
    broadcast(args, root, what);
    const at::Tensor out = args[0].cpu();
    return std::string(reinterpret_cast<const char*>(out.data_ptr<uint8_t>()), static_cast<size_t>(n));
  }

 private:
  void check_root(int root, const std::string& what) const {
    BERTH_CHECK(root >= 0 && root < world_size(), what, ": broadcast root ", root, " is not a rank of this ",
                world_size(), "-rank run (ranks 0 to ", world_size() - 1, ")");
  }

  c10::intrusive_ptr<compat::C10dBackend> group_;
  c10::Device device_;
  std::shared_ptr<const Shared> shared_;
};

// ---------------------------------------------------------------------------------------------------------
// Rendezvous and backends.

std::string build_backends_text() { return join(available_backends(), ", "); }

std::string how_to_get(const std::string& backend) {
  if (backend == "nccl")
    return "NCCL comes with a CUDA build of libtorch: rebuild berth against one (cmake -DTorch_DIR=<libtorch "
           "with CUDA>/share/cmake/Torch), or use --backend gloo";
  if (backend == "mpi")
    return "c10d's MPI backend exists only in a libtorch built from source with USE_MPI=1 and an MPI "
           "installation; rebuild berth against one, or use --backend gloo";
  return "Gloo comes with libtorch's c10d (Debian: libgloo-dev); reconfigure berth so CMake finds it";
}

// The backend `options.backend` names for `device`, refused when this build lacks it.
std::string resolve_backend(const std::string& requested, c10::Device device) {
  const std::vector<std::string> have = available_backends();
  auto has = [&](const std::string& b) { return std::find(have.begin(), have.end(), b) != have.end(); };
  std::string backend = text::to_lower(requested);
  if (backend == "auto") {
    backend = device.is_cuda() && has("nccl") ? "nccl" : "gloo";
    BERTH_CHECK(has(backend), "no process-group backend is compiled into this build of berth (it has: ",
                build_backends_text(), "). Fix: ", how_to_get("gloo"), ".");
    return backend;
  }
  BERTH_CHECK(backend == "gloo" || backend == "nccl" || backend == "mpi", "unknown distributed backend '",
              requested, "': expected auto, gloo, nccl or mpi (this build has: ", build_backends_text(),
              ").");
  BERTH_CHECK(has(backend), "distributed backend '", backend,
              "' is not available in this build of berth (torch ", TORCH_VERSION,
              "; it has: ", build_backends_text(), "). Fix: ", how_to_get(backend), ".");
  BERTH_CHECK(backend != "nccl" || device.is_cuda(), "distributed backend 'nccl' needs a CUDA device, found ",
              device, ". Fix: run on GPUs, or use --backend gloo (or auto) on the CPU.");
  return backend;
}

// Every rank announces itself and waits for the others, so a missing rank is named instead of hanging in
// Gloo.
void rendezvous(c10d::Store& store, int rank, int world, Millis timeout, const std::string& where) {
  const std::string me = "host " + this_host() + " pid " + std::to_string(getpid());
  store.set("arrived/" + std::to_string(rank), string_to_bytes(me));
  std::vector<std::string> keys;
  for (int r = 0; r < world; ++r) keys.push_back("arrived/" + std::to_string(r));
  // One check of all keys per poll: with many ranks, per-key polling would flood rank 0's store.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Millis pause{5};
  while (!store.check(keys)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::vector<int> missing;
      std::vector<std::string> arrived;
      for (int r = 0; r < world; ++r) {
        if (store.check({keys[r]})) {
          arrived.push_back(std::to_string(r) + " (" + bytes_to_string(store.get(keys[r])) + ")");
        } else {
          missing.push_back(r);
        }
      }
      if (missing.empty()) return;
      BERTH_FAIL(missing.size() == 1 ? "rank " : "ranks ", join_ints(missing), " of ", world,
                 " never arrived at the rendezvous at ", where, " within ", seconds_text(timeout),
                 " (waiting on rank ", rank, "); ranks that arrived: ", join(arrived, ", "),
                 ". Fix: start every rank, check MASTER_ADDR/MASTER_PORT (or the rendezvous address) and "
                 "WORLD_SIZE agree on all of them, and that rank 0's host is reachable from the others.");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(Millis(100), pause * 2);
  }
}

std::string gloo_local_addr(const CommOptions& options, const std::optional<std::string>& master_addr) {
  if (!options.local_addr.empty()) return options.local_addr;
  if (auto env = getenv_string("BERTH_LOCAL_ADDR")) return *env;
  if (!master_addr || is_loopback(*master_addr)) return "127.0.0.1";
  return "";  // this host's name
}

std::shared_ptr<Communicator> make_c10d(c10::intrusive_ptr<c10d::Store> store, int rank, int world,
                                        c10::Device device, const CommOptions& options,
                                        const std::string& where,
                                        const std::optional<std::string>& master_addr) {
  BERTH_CHECK(world >= 1 && rank >= 0 && rank < world, "rank ", rank, " of world size ", world,
              " is out of range: ranks are 0 to world size - 1");
  BERTH_CHECK(options.timeout.count() > 0, "the collective timeout must be positive, found ",
              options.timeout.count(), " ms");
  const std::string backend = resolve_backend(options.backend, device);

  // Each communicator made over one store gets its own key space, so a second one never reads stale keys.
  const int64_t instance = store->add("berth/instances/" + std::to_string(rank), 1);
  auto scoped = c10::make_intrusive<c10d::PrefixStore>("berth/" + std::to_string(instance), store);
  rendezvous(*scoped, rank, world, options.rendezvous_timeout, where);
  auto group_store = c10::make_intrusive<c10d::PrefixStore>("group", scoped);

  c10::intrusive_ptr<compat::C10dBackend> group;
  try {
    if (backend == "gloo") {
#ifdef USE_C10D_GLOO
      auto opts = c10d::ProcessGroupGloo::Options::create(options.timeout);
      const std::string addr = gloo_local_addr(options, master_addr);
      try {
        opts->devices.push_back(addr.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                             : c10d::ProcessGroupGloo::createDeviceForHostname(addr));
      } catch (const std::exception& e) {
        BERTH_FAIL("rank ", rank, " could not open a Gloo transport on '", addr.empty() ? this_host() : addr,
                   "': ", message_of(e),
                   ". Fix: set BERTH_LOCAL_ADDR to an address of this host the other ranks can reach.");
      }
      group = c10::make_intrusive<c10d::ProcessGroupGloo>(group_store, rank, world, opts);
#endif
    } else if (backend == "nccl") {
#ifdef USE_C10D_NCCL
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = options.timeout;
      group = c10::make_intrusive<c10d::ProcessGroupNCCL>(group_store, rank, world, opts);
#endif
    } else if (backend == "mpi") {
#ifdef USE_C10D_MPI
      auto mpi = c10d::ProcessGroupMPI::createProcessGroupMPI();
      BERTH_CHECK(mpi->getRank() == rank && mpi->getSize() == world, "MPI says this process is rank ",
                  mpi->getRank(), " of ", mpi->getSize(), " but the launcher's environment says rank ", rank,
                  " of ", world, ". Fix: start berth with mpirun/srun only, without torchrun variables.");
      group = mpi;
#endif
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    BERTH_FAIL(
        "rank ", rank, " of ", world, " could not connect its ", backend, " process group (rendezvous at ",
        where, "): ", message_of(e),
        ". Fix: check that every rank can reach the others (firewall, BERTH_LOCAL_ADDR), and the logs of "
        "the other ranks.");
  }
  BERTH_BUG(group, "backend ", backend, " was resolved but not constructed");
  return std::make_shared<C10dCommunicator>(group, scoped, rank, world, backend, device, options.timeout);
}

// "HOST:PORT" -> (host, port); `what` names the source in errors.
std::pair<std::string, int> parse_host_port(const std::string& text, const std::string& what) {
  const size_t colon = text.rfind(':');
  BERTH_CHECK(colon != std::string::npos && colon > 0, what, " '", text,
              "' is not HOST:PORT. Fix: e.g. tcp://10.0.0.1:29500");
  const std::optional<int> port = text::parse_digits(text.substr(colon + 1));
  BERTH_CHECK(port && *port > 0 && *port < 65536, what, " '", text, "' has no valid port (1 to 65535)");
  return {text.substr(0, colon), *port};
}

c10::intrusive_ptr<c10d::Store> connect_tcp_store(const std::string& host, int port, int rank, int world,
                                                  const CommOptions& options) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = rank == 0;
  opts.waitWorkers = false;  // berth's own rendezvous names the missing ranks
  opts.timeout = options.rendezvous_timeout;
  const std::string where = host + ":" + std::to_string(port);
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(host, opts);
  } catch (const std::exception& e) {
    if (rank == 0)
      BERTH_FAIL("rank 0 could not host the rendezvous store on port ", port, " (", where,
                 "): ", message_of(e),
                 ". Fix: choose a free MASTER_PORT, or stop the earlier run still holding this one.");
    BERTH_FAIL(
        "rank ", rank, " of ", world, " could not reach rank 0's rendezvous store at ", where, " within ",
        seconds_text(options.rendezvous_timeout), ": ", message_of(e),
        ". Fix: start rank 0, check MASTER_ADDR/MASTER_PORT point at rank 0's host and that the port is "
        "open between the hosts.");
  }
  store->setTimeout(std::max(options.timeout, options.rendezvous_timeout));
  return store;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------

double Communicator::all_reduce_sum(double value, const std::string& what) {
  return all_reduce_sum(std::vector<double>{value}, what)[0];
}

std::vector<double> Communicator::all_reduce_sum(const std::vector<double>& values, const std::string& what) {
  if (values.empty() || world_size() == 1) return values;
  at::Tensor t = at::tensor(c10::ArrayRef<double>(values), at::TensorOptions().dtype(at::kDouble));
  std::vector<at::Tensor> args{t.to(device())};
  all_reduce_sum(args, what);
  const at::Tensor out = args[0].cpu();
  return std::vector<double>(out.data_ptr<double>(), out.data_ptr<double>() + out.numel());
}

std::unique_ptr<PendingWork> Communicator::reduce_sum_async(at::Tensor& tensor, int root,
                                                            const std::string& what) {
  BERTH_CHECK(root >= 0 && root < world_size(), what, ": reduce root ", root, " is not a rank of this ",
              world_size(), "-rank run");
  std::vector<at::Tensor> args{tensor};
  return all_reduce_sum_async(args, what);
}

void Communicator::all_gather(const at::Tensor& input, std::vector<at::Tensor>& outputs,
                              const std::string& what) {
  const int world = world_size();
  BERTH_CHECK(static_cast<int>(outputs.size()) == world, what, ": all_gather needs ", world,
              " outputs, found ", outputs.size());
  if (world == 1) {
    outputs[0].copy_(input.view(outputs[0].sizes()));
    return;
  }
  const int64_t n = input.numel();
  std::vector<at::Tensor> all{at::zeros({world * n}, input.options())};  // [world * n]
  all[0].narrow(0, rank() * n, n).copy_(input.reshape({-1}));
  all_reduce_sum(all, what);
  for (int r = 0; r < world; ++r) outputs[r].copy_(all[0].narrow(0, r * n, n).view(outputs[r].sizes()));
}

std::vector<std::string> available_backends() {
  std::vector<std::string> out;
#ifdef USE_C10D_GLOO
  out.push_back("gloo");
#endif
#ifdef USE_C10D_NCCL
  out.push_back("nccl");
#endif
#ifdef USE_C10D_MPI
  out.push_back("mpi");
#endif
  out.push_back("local");
  return out;
}

std::optional<Millis> dist_timeout_from_env(const EnvLookup& env) {
  const std::optional<std::string> raw = env("BERTH_DIST_TIMEOUT");
  if (!raw) return std::nullopt;
  const std::string text(text::trim(*raw));
  double seconds = 0;
  size_t used = 0;
  bool ok = !text.empty();
  if (ok) {
    try {
      seconds = std::stod(text, &used);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  BERTH_CHECK(
      ok && used == text.size() && std::isfinite(seconds) && seconds > 0, "BERTH_DIST_TIMEOUT='", *raw,
      "' is not a positive number of seconds. Fix: set BERTH_DIST_TIMEOUT=600 (or any seconds > 0), or "
      "unset it for the default of 5 minutes.");
  return Millis(std::max<int64_t>(1, static_cast<int64_t>(std::llround(seconds * 1000.0))));
}

std::shared_ptr<Communicator> make_local_communicator() { return std::make_shared<LocalCommunicator>(); }

std::shared_ptr<Communicator> make_communicator(c10::intrusive_ptr<c10d::Store> store, int rank,
                                                int world_size, c10::Device device,
                                                const CommOptions& options) {
  BERTH_CHECK(store, "make_communicator: no store given");
  return make_c10d(std::move(store), rank, world_size, device, options, "the given store",
                   getenv_string("MASTER_ADDR"));
}

std::shared_ptr<Communicator> init_communicator(const DistEnv& env, c10::Device device,
                                                const CommOptions& options_in) {
  CommOptions options = options_in;
  if (auto timeout = dist_timeout_from_env()) options.timeout = *timeout;
  if (env.world_size == 1) return make_local_communicator();

  const std::string& rdv = options.rendezvous;
  if (rdv.rfind("file://", 0) == 0) {
    const std::string path = rdv.substr(7);
    BERTH_CHECK(!path.empty(), "rendezvous '", rdv,
                "' names no file. Fix: file:///shared/dir/berth-rendezvous");
    c10::intrusive_ptr<c10d::Store> store;
    try {
      store = c10::make_intrusive<c10d::FileStore>(path, env.world_size);
    } catch (const std::exception& e) {
      BERTH_FAIL("could not open the rendezvous file '", path, "': ", message_of(e),
                 ". Fix: use a path on a file system every rank can write (and delete it between runs).");
    }
    store->setTimeout(std::max(options.timeout, options.rendezvous_timeout));
    return make_c10d(store, env.rank, env.world_size, device, options, rdv, std::nullopt);
  }
  std::string host;
  int port = 0;
  if (rdv.rfind("tcp://", 0) == 0) {
    std::tie(host, port) = parse_host_port(rdv.substr(6), "rendezvous");
  } else {
    BERTH_CHECK(rdv == "env", "unknown rendezvous '", rdv,
                "': expected env (MASTER_ADDR/MASTER_PORT), file://PATH or tcp://HOST:PORT");
    host = env.master_addr.value_or("127.0.0.1");
    BERTH_CHECK(
        env.master_port.has_value(), "a ", env.world_size,
        "-rank run needs MASTER_PORT for its rendezvous (rank 0 hosts the store at MASTER_ADDR:MASTER_PORT, "
        "MASTER_ADDR is ",
        env.master_addr ? *env.master_addr : "unset -> 127.0.0.1",
        "). Fix: export MASTER_PORT=29500 (and MASTER_ADDR=<rank 0's host>) on every rank, or launch with "
        "torchrun, which sets both.");
    port = *env.master_port;
  }
  auto store = connect_tcp_store(host, port, env.rank, env.world_size, options);
  return make_c10d(store, env.rank, env.world_size, device, options, host + ":" + std::to_string(port), host);
}

void check_agreement(Communicator& comm, const std::vector<std::pair<std::string, std::string>>& items,
                     const std::string& what) {
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& [key, value] : items) mine.push_back({key, value});
  const std::vector<std::string> all = comm.all_gather_string(mine.dump(), what);
  std::vector<std::vector<std::pair<std::string, std::string>>> lists;
  for (const std::string& text : all) {
    std::vector<std::pair<std::string, std::string>> list;
    for (const auto& item : nlohmann::json::parse(text)) list.emplace_back(item[0], item[1]);
    lists.push_back(std::move(list));
  }
  const int world = static_cast<int>(lists.size());
  size_t longest = 0;
  for (const auto& l : lists) longest = std::max(longest, l.size());

  // Ranks grouped by what they have at one position, so 64 agreeing ranks print as one line.
  auto describe = [&](const std::function<std::string(int)>& of) {
    std::map<std::string, std::vector<int>> groups;
    std::vector<std::string> order;
    for (int r = 0; r < world; ++r) {
      const std::string v = of(r);
      if (!groups.count(v)) order.push_back(v);
      groups[v].push_back(r);
    }
    std::vector<std::string> parts;
    for (const std::string& v : order)
      parts.push_back((groups[v].size() == 1 ? "rank " : "ranks ") + join_ints(groups[v]) + ": " + v);
    return join(parts, "; ");
  };

  for (size_t i = 0; i < longest; ++i) {
    bool same = true;
    for (int r = 1; r < world && same; ++r) {
      const bool a = i < lists[0].size(), b = i < lists[r].size();
      same = a == b && (!a || lists[0][i] == lists[r][i]);
    }
    if (same) continue;
    bool keys_agree = true;
    for (int r = 0; r < world; ++r)
      keys_agree = keys_agree && i < lists[r].size() && lists[r][i].first == lists[0][i].first;
    if (keys_agree) {
      BERTH_FAIL(what, ": the ranks disagree on '", lists[0][i].first,
                 "': ", describe([&](int r) { return lists[r][i].second; }),
                 ". Fix: every rank must run with the same model, data and arguments.");
    }
    BERTH_FAIL(what, ": the ranks' lists differ at item ", i + 1, ": ", describe([&](int r) {
                 if (i >= lists[r].size())
                   return "(no item " + std::to_string(i + 1) + ": " + std::to_string(lists[r].size()) +
                          " items)";
                 return "'" + lists[r][i].first + "' = " + lists[r][i].second;
               }),
               ". Fix: every rank must run with the same model, data and arguments.");
  }
}

}  // namespace berth::dist
