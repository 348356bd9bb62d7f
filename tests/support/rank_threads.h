// Several ranks in one test process: one thread per rank over a shared HashStore, Gloo on the CPU.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "berth/dist/communicator.h"

namespace berth::testing {

// Runs fn(rank, comm) on `world` threads and returns each rank's error text ("" when it returned normally).
// Collectives time out after `collective_timeout`, so a rank left alone fails instead of hanging; past
// `deadline` the test aborts rather than hang the suite.
inline std::vector<std::string> run_ranks(
    int world, const std::function<void(int, std::shared_ptr<dist::Communicator>)>& fn,
    std::chrono::seconds deadline = std::chrono::seconds(120),
    std::chrono::seconds collective_timeout = std::chrono::seconds(30)) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  dist::CommOptions options;
  options.backend = "gloo";
  options.timeout = collective_timeout;
  std::vector<std::string> errors(world);
  std::vector<std::promise<void>> finished(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto comm = dist::make_communicator(store, r, world, c10::Device(c10::kCPU), options);
        fn(r, comm);
      } catch (const std::exception& e) {
        errors[r] = std::string("error: ") + e.what();
        if (errors[r] == "error: ") errors[r] = "error: (empty message)";
      }
      finished[r].set_value();
    });
  }
  const auto until = std::chrono::steady_clock::now() + deadline;
  for (int r = 0; r < world; ++r) {
    if (finished[r].get_future().wait_until(until) != std::future_status::ready) {
      std::cerr << "rank " << r << " did not finish within " << deadline.count() << " s: aborting\n";
      std::abort();
    }
  }
  for (auto& t : threads) t.join();
  return errors;
}

inline void expect_ok(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// The largest absolute elementwise difference, in double (0 for two empty tensors).
inline double max_diff(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() == 0 && b.numel() == 0) return 0;
  return (a.detach().to(at::kDouble) - b.detach().to(at::kDouble)).abs().max().item<double>();
}

}  // namespace berth::testing
