// Thread configuration and BLAS detection in this very process.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "berth/core/blas_info.h"
#include "berth/core/error.h"
#include "berth/core/process_defaults.h"
#include "berth/core/runtime.h"

// As in the berth command: libgomp must start with a passive wait (checked below).
BERTH_PROCESS_DEFAULTS();

namespace {

// Restores libtorch's thread count, OMP_NUM_THREADS and OMP_WAIT_POLICY after each test.
class Runtime : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_threads_ = at::get_num_threads();
    if (const char* v = getenv("OMP_NUM_THREADS")) saved_env_ = v;
    if (const char* v = getenv("OMP_WAIT_POLICY")) saved_wait_ = v;
    unsetenv("OMP_NUM_THREADS");
  }
  void TearDown() override {
    at::set_num_threads(saved_threads_);
    if (saved_env_)
      setenv("OMP_NUM_THREADS", saved_env_->c_str(), 1);
    else
      unsetenv("OMP_NUM_THREADS");
    if (saved_wait_)
      setenv("OMP_WAIT_POLICY", saved_wait_->c_str(), 1);
    else
      unsetenv("OMP_WAIT_POLICY");
  }
  int saved_threads_ = 1;
  std::optional<std::string> saved_env_;
  std::optional<std::string> saved_wait_;
};

TEST_F(Runtime, AvailableCpusIsPositiveAndWithinOnline) {
  int cpus = berth::runtime::available_cpus();
  EXPECT_GE(cpus, 1);
  EXPECT_LE(cpus, static_cast<int>(std::thread::hardware_concurrency()));
}

TEST_F(Runtime, ExplicitThreadsAreApplied) {
  auto state = berth::runtime::configure_threads({1});
  EXPECT_EQ(state.intra_op_threads, 1);
  EXPECT_EQ(at::get_num_threads(), 1);
}

TEST_F(Runtime, ProcessDefaultsMadeOpenMpWaitPassively) {
  // This test program carries BERTH_PROCESS_DEFAULTS(), so libgomp started with PASSIVE unless the
  // environment chose another policy; the spin count is libgomp's own start-up value, not the variable.
  auto spin = berth::runtime::openmp_spin_count();
  ASSERT_TRUE(spin.has_value()) << "libtorch's OpenMP runtime here is libgomp: its spin count must be known";
  if (saved_wait_ && *saved_wait_ != "PASSIVE")
    GTEST_SKIP() << "OMP_WAIT_POLICY=" << *saved_wait_ << " was given";
  EXPECT_EQ(*spin, 0u);
}

TEST_F(Runtime, AutomaticThreadsFollowTheEffectiveWaitPolicy) {
  auto spin = berth::runtime::openmp_spin_count();
  // Changing the variable now cannot change libgomp: the rule must not be fooled by it.
  setenv("OMP_WAIT_POLICY", spin && *spin == 0 ? "ACTIVE" : "PASSIVE", 1);
  auto state = berth::runtime::configure_threads({0});
  EXPECT_EQ(state.intra_op_threads, spin && *spin == 0 ? berth::runtime::available_cpus() : 1);
  // BLAS keeps every CPU either way: its threads are not OpenMP's and gain the most.
  if (state.blas_threads) {
    EXPECT_EQ(*state.blas_threads, berth::runtime::available_cpus());
  }
}

TEST_F(Runtime, AutomaticThreadsHonourOmpNumThreads) {
  setenv("OMP_NUM_THREADS", "1", 1);
  auto state = berth::runtime::configure_threads({0});
  EXPECT_EQ(state.intra_op_threads, 1);
  ASSERT_TRUE(state.omp_num_threads.has_value());
  EXPECT_EQ(*state.omp_num_threads, "1");
}

TEST_F(Runtime, NegativeThreadsNameValueAndFix) {
  try {
    berth::runtime::configure_threads({-3});
    FAIL() << "expected berth::Error";
  } catch (const berth::Error& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("found -3"), std::string::npos) << text;
    EXPECT_NE(text.find("Fix: pass --threads N with N >= 1"), std::string::npos) << text;
  }
}

TEST_F(Runtime, BlasIsDetectedAndItsThreadsFollowConfiguration) {
  auto blas = berth::query_blas();
  // The test binary links libtorch, which always pulls in some BLAS.
  EXPECT_NE(blas.kind, berth::BlasInfo::Kind::None);
  EXPECT_FALSE(blas.library_path.empty());
  if (blas.kind == berth::BlasInfo::Kind::OpenBLAS) {
    ASSERT_TRUE(berth::set_blas_threads(1));
    EXPECT_EQ(berth::query_blas().num_threads, 1);
    berth::runtime::configure_threads({2});
    EXPECT_EQ(berth::query_blas().num_threads, 2);
  }
}

TEST_F(Runtime, BlasKindNames) {
  EXPECT_EQ(berth::to_string(berth::BlasInfo::Kind::OpenBLAS), "openblas");
  EXPECT_EQ(berth::to_string(berth::BlasInfo::Kind::Reference), "reference");
}

}  // namespace
