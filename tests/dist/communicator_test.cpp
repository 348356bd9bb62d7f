// Tests the Communicator with ranks as threads over one store: collectives, rendezvous, and the errors that
// name the operation, the missing or dead ranks, and the fix.
#include "berth/dist/communicator.h"

#include <ATen/ATen.h>
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include "berth/core/error.h"
#include "support/test_support.h"

namespace berth::dist {
namespace {

using namespace std::chrono_literals;
using testing::expect_contains;

// Runs fn(rank) on `world` threads and returns each rank's error text ("" when it succeeded). A rank still
// running at the deadline fails the test (it is detached so the suite never hangs).
std::vector<std::string> run_ranks(int world, const std::function<void(int)>& fn,
                                   std::chrono::seconds deadline = 30s) {
  std::vector<std::future<std::string>> results;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    std::packaged_task<std::string()> task([&fn, r]() -> std::string {
      try {
        fn(r);
      } catch (const berth::Error& e) {
        return std::string("[berth::Error] ") + e.what();
      } catch (const std::exception& e) {
        return std::string("[other exception] ") + e.what();
      }
      return "";
    });
    results.push_back(task.get_future());
    threads.emplace_back(std::move(task));
  }
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::vector<std::string> errors;
  bool hung = false;
  for (auto& f : results) {
    if (f.wait_until(until) != std::future_status::ready) {
      hung = true;
      errors.push_back("(hung)");
    } else {
      errors.push_back(f.get());
    }
  }
  for (auto& t : threads) {
    if (hung) {
      t.detach();
    } else {
      t.join();
    }
  }
  EXPECT_FALSE(hung) << "a rank was still running after " << deadline.count() << " s";
  return errors;
}

// The message goes into the test's XML record (--gtest_output=xml), for reading what users will see.
void record(const std::string& name, const std::string& text) { ::testing::Test::RecordProperty(name, text); }

void expect_no_errors(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

CommOptions quick(std::chrono::milliseconds timeout = 10s) {
  CommOptions options;
  options.backend = "gloo";
  options.timeout = timeout;
  options.rendezvous_timeout = 10s;
  return options;
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

class CommunicatorRanks : public ::testing::TestWithParam<int> {};

TEST_P(CommunicatorRanks, AllReduceSyncAndAsyncSumOverRanks) {
  const int world = GetParam();
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::vector<float>> sync_out(world), async_out(world);
  expect_no_errors(run_ranks(world, [&](int rank) {
    auto comm = make_communicator(store, rank, world, c10::kCPU, quick());
    EXPECT_EQ(comm->rank(), rank);
    EXPECT_EQ(comm->world_size(), world);
    EXPECT_EQ(comm->backend_name(), "gloo");
    std::vector<at::Tensor> t{at::full({3}, static_cast<float>(rank + 1))};
    comm->all_reduce_sum(t, "all-reduce test");
    sync_out[rank] = std::vector<float>(t[0].data_ptr<float>(), t[0].data_ptr<float>() + 3);
    // Two tensors of different shapes: one bucket, summed elementwise.
    std::vector<at::Tensor> bucket{at::full({2, 2}, static_cast<float>(rank)), at::arange(3).to(at::kFloat)};
    auto pending = comm->all_reduce_sum_async(bucket, "async bucket");
    pending->wait();
    async_out[rank] = {bucket[0][1][1].item<float>(), bucket[1][2].item<float>()};
    // A collective over no tensors is berth's own bug (every caller passes one), refused before it travels.
    std::vector<at::Tensor> none;
    EXPECT_THROW(comm->all_reduce_sum(none, "empty all-reduce"), berth::InternalError);
  }));
  const float total = static_cast<float>(world * (world + 1) / 2);
  const float rank_sum = static_cast<float>(world * (world - 1) / 2);
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(sync_out[r], std::vector<float>(3, total)) << "rank " << r;
    EXPECT_EQ(async_out[r], (std::vector<float>{rank_sum, 2.0f * world})) << "rank " << r;
  }
}

TEST_P(CommunicatorRanks, BroadcastBarrierAndStrings) {
  const int world = GetParam();
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<float> got(world);
  std::vector<std::vector<std::string>> gathered(world);
  std::vector<std::string> broadcasted(world);
  expect_no_errors(run_ranks(world, [&](int rank) {
    auto comm = make_communicator(store, rank, world, c10::kCPU, quick());
    std::vector<at::Tensor> t{at::full({2}, static_cast<float>(10 * rank + 7))};
    comm->broadcast(t, world - 1, "broadcast test");
    got[rank] = t[0][1].item<float>();
    comm->barrier("barrier test");
    gathered[rank] = comm->all_gather_string(std::string(rank + 1, static_cast<char>('a' + rank)), "gather");
    broadcasted[rank] = comm->broadcast_string(rank == 1 ? "from rank one" : "", 1, "bcast string");
  }));
  std::vector<std::string> expected_gather;
  for (int r = 0; r < world; ++r) expected_gather.push_back(std::string(r + 1, static_cast<char>('a' + r)));
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(got[r], static_cast<float>(10 * (world - 1) + 7)) << "rank " << r;
    EXPECT_EQ(gathered[r], expected_gather) << "rank " << r;
    EXPECT_EQ(broadcasted[r], "from rank one") << "rank " << r;
  }
}

TEST_P(CommunicatorRanks, DoubleHelpers) {
  const int world = GetParam();
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<double> one(world);
  std::vector<std::vector<double>> many(world);
  expect_no_errors(run_ranks(world, [&](int rank) {
    auto comm = make_communicator(store, rank, world, c10::kCPU, quick());
    one[rank] = comm->all_reduce_sum(0.25 + rank, "eval loss");
    many[rank] = comm->all_reduce_sum(std::vector<double>{1.0, 1e-12 * rank}, "metric counts");
  }));
  for (int r = 0; r < world; ++r) {
    EXPECT_DOUBLE_EQ(one[r], 0.25 * world + world * (world - 1) / 2.0);
    EXPECT_DOUBLE_EQ(many[r][0], world);
    EXPECT_DOUBLE_EQ(many[r][1], 1e-12 * world * (world - 1) / 2.0);
  }
}

INSTANTIATE_TEST_SUITE_P(TwoAndThree, CommunicatorRanks, ::testing::Values(2, 3));

TEST(CommunicatorTest, LocalIsTheIdentity) {
  auto comm = make_local_communicator();
  EXPECT_EQ(comm->backend_name(), "local");
  EXPECT_EQ(comm->world_size(), 1);
  std::vector<at::Tensor> t{at::full({2}, 3.0f)};
  comm->all_reduce_sum(t, "x");
  comm->all_reduce_sum_async(t, "x")->wait();
  comm->broadcast(t, 0, "x");
  comm->barrier("x");
  EXPECT_EQ(t[0][0].item<float>(), 3.0f);
  EXPECT_EQ(comm->all_gather_string("s", "x"), std::vector<std::string>{"s"});
  EXPECT_EQ(comm->broadcast_string("s", 0, "x"), "s");
  EXPECT_EQ(comm->all_reduce_sum(2.5, "x"), 2.5);
  expect_contains(testing::error_text([&] { comm->broadcast(t, 1, "broadcast of weights"); }),
                  {"broadcast of weights", "root 1"});
  // init_communicator with one process is local too.
  EXPECT_EQ(init_communicator(DistEnv{}, c10::kCPU)->backend_name(), "local");
}

TEST(CommunicatorTest, RankThatNeverCallsMakesTheOtherTimeOutNamingTheOperation) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::promise<void> rank0_done;
  auto done = rank0_done.get_future().share();
  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration rank0_took{};
  const auto errors = run_ranks(2, [&](int rank) {
    auto comm = make_communicator(store, rank, 2, c10::kCPU, quick(2s));
    if (rank == 1) {
      done.wait_for(30s);  // alive, but never reaches the all-reduce
      return;
    }
    try {
      std::vector<at::Tensor> t{at::ones({4})};
      comm->all_reduce_sum(t, "all-reduce of gradient bucket 3");
    } catch (...) {
      rank0_took = std::chrono::steady_clock::now() - start;
      rank0_done.set_value();
      throw;
    }
    rank0_done.set_value();
  });
  EXPECT_EQ(errors[1], "");
  record("error", errors[0]);
  expect_contains(errors[0],
                  {"[berth::Error] all-reduce of gradient bucket 3 timed out after 2 s", "rank 0 of 2",
                   "Every other rank is still alive", "BERTH_DIST_TIMEOUT", "check its log"});
  EXPECT_LT(rank0_took, 12s);
}

TEST(CommunicatorTest, DeadRankIsNamedByItsStoppedHeartbeat) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  const auto errors = run_ranks(2, [&](int rank) {
    auto comm = make_communicator(store, rank, 2, c10::kCPU, quick(3s));
    if (rank == 1) {
      std::this_thread::sleep_for(300ms);
      comm.reset();  // as if the process died: its sockets close and its heartbeat stops
      return;
    }
    std::vector<at::Tensor> t{at::ones({4})};
    comm->all_reduce_sum(t, "all-reduce of gradient bucket 0");
  });
  EXPECT_EQ(errors[1], "");
  record("error", errors[0]);
  expect_contains(
      errors[0], {"[berth::Error] all-reduce of gradient bucket 0 failed: a peer was lost", "rank 0 of 2",
                  "Rank 1 (host ", " pid ", ") has stopped its heartbeat", "probably crashed", "c10d said:"});
}

TEST(CommunicatorTest, RendezvousNamesTheMissingRank) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  CommOptions options = quick();
  options.rendezvous_timeout = 1s;
  const std::string error = testing::error_text([&] { make_communicator(store, 0, 2, c10::kCPU, options); });
  record("error", error);
  expect_contains(error, {"rank 1 of 2 never arrived at the rendezvous", "within 1 s",
                          "ranks that arrived: 0 (host ", " pid ", "Fix: start every rank", "MASTER_PORT"});
}

TEST(CommunicatorTest, TcpRendezvousFromTheEnvironment) {
  const int port = free_port();
  std::vector<float> out(2);
  expect_no_errors(run_ranks(2, [&](int rank) {
    DistEnv env;
    env.rank = rank;
    env.world_size = 2;
    env.master_addr = "127.0.0.1";
    env.master_port = port;
    CommOptions options = quick();
    if (rank == 1) options.local_addr = "127.0.0.2";  // a second "host" for Gloo's transport
    auto comm = init_communicator(env, c10::kCPU, options);
    EXPECT_EQ(comm->backend_name(), "gloo");
    std::vector<at::Tensor> t{at::full({1}, 2.0f + rank)};
    comm->all_reduce_sum(t, "tcp all-reduce");
    out[rank] = t[0].item<float>();
  }));
  EXPECT_EQ(out, (std::vector<float>{5.0f, 5.0f}));
}

TEST(CommunicatorTest, TcpRendezvousNamesTheAddressWhenARankIsMissing) {
  const int port = free_port();
  DistEnv env;
  env.rank = 0;
  env.world_size = 2;
  CommOptions options = quick();
  options.rendezvous = "tcp://127.0.0.1:" + std::to_string(port);
  options.rendezvous_timeout = 1s;
  expect_contains(testing::error_text([&] { init_communicator(env, c10::kCPU, options); }),
                  {"rank 1 of 2 never arrived at the rendezvous at 127.0.0.1:" + std::to_string(port)});
}

TEST(CommunicatorTest, NonZeroRankThatCannotReachTheStoreNamesTheAddress) {
  const int port = free_port();  // nobody listens there
  DistEnv env;
  env.rank = 1;
  env.world_size = 2;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  CommOptions options = quick();
  options.rendezvous_timeout = 1s;
  const auto start = std::chrono::steady_clock::now();
  const std::string error = testing::error_text([&] { init_communicator(env, c10::kCPU, options); });
  record("error", error);
  expect_contains(
      error, {"rank 1 of 2 could not reach rank 0's rendezvous store at 127.0.0.1:" + std::to_string(port),
              "Fix: start rank 0", "MASTER_ADDR/MASTER_PORT"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

TEST(CommunicatorTest, FileRendezvous) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("berth-rdv-" + std::to_string(getpid()) + "-" + std::to_string(free_port()));
  std::vector<std::vector<std::string>> got(2);
  expect_no_errors(run_ranks(2, [&](int rank) {
    DistEnv env;
    env.rank = rank;
    env.world_size = 2;
    CommOptions options = quick();
    options.rendezvous = "file://" + path.string();
    auto comm = init_communicator(env, c10::kCPU, options);
    got[rank] = comm->all_gather_string("r" + std::to_string(rank), "file gather");
  }));
  std::filesystem::remove(path);
  EXPECT_EQ(got[0], (std::vector<std::string>{"r0", "r1"}));
  EXPECT_EQ(got[1], got[0]);
}

TEST(CommunicatorTest, MissingMasterPortIsRefused) {
  DistEnv env;
  env.rank = 0;
  env.world_size = 2;
  expect_contains(testing::error_text([&] { init_communicator(env, c10::kCPU, quick()); }),
                  {"2-rank run needs MASTER_PORT", "unset -> 127.0.0.1", "export MASTER_PORT"});
}

TEST(CommunicatorTest, CheckAgreementNamesTheKeyAndEachRanksValue) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::string> mismatch(3);
  std::vector<std::string> length_mismatch(3);
  expect_no_errors(run_ranks(3, [&](int rank) {
    auto comm = make_communicator(store, rank, 3, c10::kCPU, quick());
    check_agreement(*comm, {{"model", "bert-tiny"}, {"seed", "42"}}, "argument check");  // equal: passes
    mismatch[rank] = testing::error_text([&] {
      check_agreement(*comm,
                      {{"parameter count", "3"},
                       {"parameter w", rank == 2 ? "shape [3] dtype float32" : "shape [2] dtype float32"},
                       {"parameter b", rank == 1 ? "x" : "y"}},
                      "model check before step 1");
    });
    length_mismatch[rank] = testing::error_text([&] {
      std::vector<std::pair<std::string, std::string>> items{{"a", "1"}};
      if (rank == 1) items.emplace_back("b", "2");
      check_agreement(*comm, items, "list check");
    });
  }));
  record("mismatch", mismatch[0]);
  record("length_mismatch", length_mismatch[0]);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(mismatch[r], mismatch[0]) << "identical on every rank";
    EXPECT_EQ(length_mismatch[r], length_mismatch[0]);
  }
  expect_contains(mismatch[0], {"model check before step 1", "disagree on 'parameter w'",
                                "ranks 0, 1: shape [2] dtype float32", "rank 2: shape [3] dtype float32"});
  EXPECT_FALSE(testing::contains(mismatch[0], "parameter b")) << "only the first difference";
  expect_contains(length_mismatch[0],
                  {"list check", "differ at item 2", "ranks 0, 2: (no item 2: 1 items)", "rank 1: 'b' = 2"});
}

TEST(CommunicatorTest, BackendErrorsSayWhatThisBuildHas) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  CommOptions options = quick();
  options.backend = "carrier-pigeon";
  expect_contains(testing::error_text([&] { make_communicator(store, 0, 1, c10::kCPU, options); }),
                  {"unknown distributed backend 'carrier-pigeon'", "auto, gloo, nccl or mpi", "gloo"});
  const auto have = available_backends();
  EXPECT_NE(std::find(have.begin(), have.end(), "gloo"), have.end());
  if (std::find(have.begin(), have.end(), "mpi") == have.end()) {
    options.backend = "mpi";
    expect_contains(testing::error_text([&] { make_communicator(store, 0, 1, c10::kCPU, options); }),
                    {"backend 'mpi' is not available in this build", "it has: gloo", "USE_MPI=1"});
  }
  options.backend = "nccl";
  const std::string nccl = testing::error_text([&] { make_communicator(store, 0, 1, c10::kCPU, options); });
  if (std::find(have.begin(), have.end(), "nccl") == have.end()) {
    expect_contains(nccl, {"backend 'nccl' is not available in this build", "CUDA build of libtorch"});
  } else {
    expect_contains(nccl, {"'nccl' needs a CUDA device"});
  }
}

TEST(CommunicatorTest, DistTimeoutFromTheEnvironment) {
  auto env = [](std::optional<std::string> value) {
    return [value](const std::string& name) -> std::optional<std::string> {
      return name == "BERTH_DIST_TIMEOUT" ? value : std::nullopt;
    };
  };
  EXPECT_FALSE(dist_timeout_from_env(env(std::nullopt)).has_value());
  EXPECT_EQ(dist_timeout_from_env(env("600"))->count(), 600000);
  EXPECT_EQ(dist_timeout_from_env(env(" 2.5 "))->count(), 2500);
  for (const char* bad : {"ten", "", "5m", "-3", "0", "nan"}) {
    expect_contains(testing::error_text([&] { dist_timeout_from_env(env(std::string(bad))); }),
                    {"BERTH_DIST_TIMEOUT='" + std::string(bad) + "'", "positive number of seconds"});
  }
}

}  // namespace
}  // namespace berth::dist
