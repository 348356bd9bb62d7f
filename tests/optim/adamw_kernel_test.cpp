// Tests for berth's fused CPU AdamW kernel (berth/optim/adamw_kernel.h): every ISA this CPU has against
// torch.optim.AdamW (goldens from tests/goldens/adamw_kernel_goldens.py) on odd lengths and extreme
// gradients, ISAs bit-identical, thread count not changing results, BERTH_ADAMW_ISA, and the tensor entry
// point's errors.
#include "berth/optim/adamw_kernel.h"

#include "berth/core/error.h"
#include "berth/io/safetensors.h"
#include "optim/optim_test_support.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

using berth::optim::AdamWStepScalars;

// tests/goldens/adamw_kernel_goldens.py's hashed_values, re-stated: both sides build each value exactly in
// double and round it once to float.
uint64_t mix(uint64_t x) {
  constexpr uint64_t kM32 = 0xFFFFFFFFu, kMul = 73244475;
  for (int i = 0; i < 3; ++i) {
    x ^= x >> 16;
    x = (x * kMul) & kM32;
  }
  return x ^ (x >> 16);
}

std::vector<float> hashed_values(int64_t n, int64_t salt, const std::string& kind) {
  std::vector<float> out(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t x =
        mix((static_cast<uint64_t>(i) * 2654435 + static_cast<uint64_t>(salt) * 1013904223) & 0xFFFFFFFFu);
    const double mantissa = (static_cast<double>(x & 0xFFFFFF) - (1 << 23)) / (1 << 23);
    const int e = static_cast<int>((x >> 24) & 0xFF);
    int exponent = 0;
    if (kind == "normal") exponent = -8 + e % 8;
    if (kind == "tiny") exponent = -150 + e % 30;
    if (kind == "large") exponent = 50 + e % 40;
    if (kind == "mixed") exponent = -150 + e % 240;
    out[static_cast<std::size_t>(i)] = static_cast<float>(std::ldexp(mantissa, exponent));
  }
  return out;
}

// Distance in representable floats (0: same bits, or both zeros); infinities and NaNs must match exactly.
int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  if (std::isinf(a) || std::isinf(b)) return a == b ? 0 : INT64_MAX;
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? -static_cast<int64_t>(i & 0x7FFFFFFF) : static_cast<int64_t>(i);
  };
  return std::llabs(ordered(a) - ordered(b));
}

struct Golden {
  nlohmann::json meta;
  std::map<std::string, at::Tensor> tensors;
};

const Golden& golden() {
  static const Golden g = [] {
    Golden out;
    out.meta = berth::testing::optim_golden("adamw_kernel.json");
    if (!out.meta.empty())
      out.tensors =
          berth::io::load_safetensors(berth::testing::golden_dir() + "/optim/adamw_kernel.safetensors");
    return out;
  }();
  return g;
}

struct State {
  std::vector<float> p, m, v;
};

// Runs one golden case through `isa` and compares every stored step with torch's p, m and v; returns the
// final state. max_ulp: the largest distance seen (for the report).
State run_case(const nlohmann::json& c, const std::string& isa, int64_t* max_ulp) {
  const nlohmann::json& meta = golden().meta;
  const int64_t n = c.at("n").get<int64_t>();
  const int64_t salt = c.at("salt").get<int64_t>();
  const std::string name = c.at("name").get<std::string>();
  State st{hashed_values(n, salt, "param"), std::vector<float>(n, 0.0F), std::vector<float>(n, 0.0F)};
  const std::vector<int64_t> stored = c.at("stored_steps").get<std::vector<int64_t>>();
  std::vector<double> p_bound(n, 0.0);
  for (int64_t step = 1; step <= c.at("steps").get<int64_t>(); ++step) {
    const std::vector<float> g = hashed_values(n, salt + step, c.at("kind").get<std::string>());
    const AdamWStepScalars s = berth::optim::adamw_scalars(
        meta.at("lr").get<double>(), meta.at("beta1").get<double>(), meta.at("beta2").get<double>(),
        meta.at("eps").get<double>(), c.at("weight_decay").get<double>(), step);
    berth::optim::adamw_step_flat_isa(isa, st.p.data(), g.data(), st.m.data(), st.v.data(), n, s);
    // The PyPI torch takes exp_avg_sq.sqrt() from MKL's vector math, which is not correctly rounded (an ulp
    // off for about one element in six); berth's kernels use the exact sqrt. So p may drift from torch's by
    // what one ulp of sqrt(v) moves each step's update, plus p's own rounding, summed over the steps so far.
    for (int64_t i = 0; i < n; ++i) {
      const double update =
          std::fabs(static_cast<double>(s.neg_step_size) * st.m[i] /
                    (std::sqrt(static_cast<double>(st.v[i])) / s.bias_correction2_sqrt + s.eps));
      const float p = std::fabs(st.p[i]);
      p_bound[i] += 2.0 * (std::nextafter(p, INFINITY) - p) + 4 * 0x1p-24 * update;
    }
    if (std::find(stored.begin(), stored.end(), step) == stored.end()) continue;
    const std::array<std::pair<const char*, const std::vector<float>*>, 3> outputs{
        {{"p", &st.p}, {"m", &st.m}, {"v", &st.v}}};
    for (const auto& [what, values] : outputs) {
      const std::string key = name + "/" + std::to_string(step) + "/" + what;
      const at::Tensor expected = golden().tensors.at(key).contiguous();
      EXPECT_EQ(expected.numel(), n) << key;
      if (expected.numel() != n) continue;
      const float* e = expected.data_ptr<float>();
      int64_t worst = 0, worst_at = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t d = ulp_distance((*values)[i], e[i]);
        if (d > worst) worst = d, worst_at = i;
      }
      if (std::string(what) == "p") {
        int64_t beyond = 0;
        for (int64_t i = 0; i < n; ++i) beyond += std::fabs(static_cast<double>(st.p[i]) - e[i]) > p_bound[i];
        EXPECT_EQ(beyond, 0) << isa << " " << key << ": elements of p beyond sqrt's ulp of torch's";
        continue;
      }
      *max_ulp = std::max(*max_ulp, worst);
      // m and v involve no sqrt: berth rounds as torch does (0 ulp measured); 1 ulp of slack for torch builds
      // that fuse differently.
      EXPECT_LE(worst, 1) << isa << " " << key << "[" << worst_at << "]: berth " << (*values)[worst_at]
                          << ", torch " << e[worst_at];
    }
  }
  return st;
}

class AdamWKernelIsa : public ::testing::TestWithParam<std::string> {};

TEST_P(AdamWKernelIsa, MatchesTorchAdamWAndTheScalarKernelBitForBit) {
  const std::vector<std::string> available = berth::optim::adamw_kernel_available_isas();
  if (std::find(available.begin(), available.end(), GetParam()) == available.end())
    GTEST_SKIP() << "this CPU lacks " << GetParam();
  ASSERT_FALSE(golden().meta.empty());
  const nlohmann::json& cases = golden().meta.at("cases");
  ASSERT_GE(cases.size(), 14U);
  int64_t max_ulp = 0;
  for (const nlohmann::json& c : cases) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const State mine = run_case(c, GetParam(), &max_ulp);
    if (GetParam() == "scalar") continue;
    int64_t ignored = 0;
    const State scalar = run_case(c, "scalar", &ignored);
    // Same operations in the same order, no FMA contraction anywhere: the ISAs agree to the bit.
    EXPECT_TRUE(std::memcmp(mine.p.data(), scalar.p.data(), mine.p.size() * sizeof(float)) == 0);
    EXPECT_TRUE(std::memcmp(mine.m.data(), scalar.m.data(), mine.m.size() * sizeof(float)) == 0);
    EXPECT_TRUE(std::memcmp(mine.v.data(), scalar.v.data(), mine.v.size() * sizeof(float)) == 0);
  }
  std::printf("[ adamw ] %s: largest m/v distance to torch.optim.AdamW %lld ulp\n", GetParam().c_str(),
              static_cast<long long>(max_ulp));
}

INSTANTIATE_TEST_SUITE_P(AdamWKernel, AdamWKernelIsa, ::testing::Values("scalar", "avx2", "avx512"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(AdamWKernel, GoldensCoverTheTailsAndExtremeGradients) {
  ASSERT_FALSE(golden().meta.empty());
  std::vector<int64_t> lengths;
  std::vector<std::string> kinds;
  for (const nlohmann::json& c : golden().meta.at("cases")) {
    lengths.push_back(c.at("n").get<int64_t>());
    kinds.push_back(c.at("kind").get<std::string>());
  }
  for (int64_t n : {1, 7, 8, 15, 33, 1000003})
    EXPECT_NE(std::find(lengths.begin(), lengths.end(), n), lengths.end()) << n;
  for (const char* kind : {"normal", "tiny", "large", "mixed"})
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end()) << kind;
  // The extreme cases really are extreme: denormal grads, and v overflowing to inf from (1-b2)*g*g.
  const std::vector<float> tiny = hashed_values(1000, 1, "tiny");
  EXPECT_TRUE(
      std::any_of(tiny.begin(), tiny.end(), [](float x) { return std::fpclassify(x) == FP_SUBNORMAL; }));
  const at::Tensor v = golden().tensors.at("large_grads/3/v");
  EXPECT_TRUE(v.isinf().any().item<bool>());
  EXPECT_TRUE(v.isfinite().any().item<bool>());
}

TEST(AdamWKernel, DispatchPicksTheBestIsaTheCpuHas) {
  const std::vector<std::string> available = berth::optim::adamw_kernel_available_isas();
  ASSERT_FALSE(available.empty());
  EXPECT_EQ(available.back(), "scalar");
#if defined(__x86_64__)
  EXPECT_EQ(std::find(available.begin(), available.end(), "avx2") != available.end(),
            __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(std::find(available.begin(), available.end(), "avx512") != available.end(),
            __builtin_cpu_supports("avx512f") != 0);
#endif
  const char* forced = std::getenv("BERTH_ADAMW_ISA");
  EXPECT_EQ(berth::optim::adamw_kernel_isa(),
            forced != nullptr && *forced ? std::string(forced) : available[0]);
  std::printf("[ adamw ] dispatched ISA: %s\n", berth::optim::adamw_kernel_isa().c_str());
}

// Runs DispatchPicksTheBestIsaTheCpuHas in a fresh process (the dispatch is decided once per process) with
// BERTH_ADAMW_ISA set; returns its output.
std::string child_with_isa(const std::string& isa) {
  char self[4096] = {};
  EXPECT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  const std::string command = "BERTH_ADAMW_ISA=" + isa + " " + self +
                              " --gtest_filter=AdamWKernel.DispatchPicksTheBestIsaTheCpuHas 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  while (pipe != nullptr && fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  if (pipe != nullptr) pclose(pipe);
  return out;
}

TEST(AdamWKernel, EnvironmentForcesAnIsaAndRejectsOnesTheCpuLacks) {
  EXPECT_TRUE(berth::testing::contains(child_with_isa("scalar"), "dispatched ISA: scalar"));
  const std::string bogus = child_with_isa("sse9");
  berth::testing::expect_contains(
      bogus, {"BERTH_ADAMW_ISA: unknown AdamW kernel 'sse9', expected avx512, avx2 or scalar", "FAILED"});
  const std::vector<std::string> available = berth::optim::adamw_kernel_available_isas();
  if (std::find(available.begin(), available.end(), "avx512") == available.end()) {
    berth::testing::expect_contains(child_with_isa("avx512"),
                                    {"BERTH_ADAMW_ISA: the AdamW kernel 'avx512' needs a CPU with AVX-512F, "
                                     "which this one lacks",
                                     "FAILED"});
  }
}

TEST(AdamWKernel, NamedIsaErrors) {
  std::vector<float> x(4, 1.0F);
  const AdamWStepScalars s = berth::optim::adamw_scalars(1e-3, 0.9, 0.999, 1e-8, 0.01, 1);
  try {
    berth::optim::adamw_step_flat_isa("neon", x.data(), x.data(), x.data(), x.data(), 4, s);
    FAIL() << "expected berth::Error";
  } catch (const berth::Error& e) {
    berth::testing::expect_contains(e.what(), {"unknown AdamW kernel 'neon'", "Fix:"});
  }
}

TEST(AdamWKernel, ResultsDoNotDependOnTheThreadCount) {
  const int saved = at::get_num_threads();
  // Odd length, so chunk edges fall mid-vector for some splits (they are rounded to 64 bytes).
  const int64_t n = 3 * (1 << 16) + 5;
  const std::vector<float> g = hashed_values(n, 7, "mixed");
  const AdamWStepScalars s = berth::optim::adamw_scalars(1e-3, 0.9, 0.999, 1e-8, 0.01, 3);
  std::vector<State> results;
  for (int threads : {1, 2, 3}) {
    at::set_num_threads(threads);
    State st{hashed_values(n, 8, "param"), hashed_values(n, 9, "normal"), hashed_values(n, 10, "normal")};
    for (float& x : st.v) x = x * x;  // a plausible v: non-negative
    berth::optim::adamw_step_flat(st.p.data(), g.data(), st.m.data(), st.v.data(), n, s);
    results.push_back(std::move(st));
  }
  at::set_num_threads(saved);
  for (std::size_t r = 1; r < results.size(); ++r) {
    EXPECT_TRUE(results[r].p == results[0].p) << "threads " << r + 1;
    EXPECT_TRUE(results[r].m == results[0].m) << "threads " << r + 1;
    EXPECT_TRUE(results[r].v == results[0].v) << "threads " << r + 1;
  }
  EXPECT_NE(results[0].p, hashed_values(n, 8, "param"));  // it did update
}

TEST(AdamWKernel, ScalarsAreTorchsDoublesRoundedToFloat) {
  const AdamWStepScalars s = berth::optim::adamw_scalars(1e-3, 0.9, 0.999, 1e-8, 0.01, 2);
  EXPECT_EQ(s.decay, static_cast<float>(1 - 1e-3 * 0.01));
  EXPECT_EQ(s.beta1, 0.9F);
  EXPECT_EQ(s.one_minus_beta1, static_cast<float>(1 - 0.9));
  EXPECT_EQ(s.beta2, 0.999F);
  EXPECT_EQ(s.one_minus_beta2, static_cast<float>(1 - 0.999));
  EXPECT_EQ(s.bias_correction2_sqrt, static_cast<float>(std::sqrt(1 - 0.999 * 0.999)));
  EXPECT_EQ(s.eps, 1e-8F);
  EXPECT_EQ(s.neg_step_size, static_cast<float>(-(1e-3 / (1 - 0.9 * 0.9))));
  EXPECT_EQ(berth::optim::adamw_scalars(1e-3, 0.9, 0.999, 1e-8, 0.0, 1).decay, 1.0F);

  auto message = [](auto fn) -> std::string {
    try {
      fn();
    } catch (const berth::Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  berth::testing::expect_contains(message([] { berth::optim::adamw_scalars(1e-3, 0.9, 0.999, 1e-8, 0, 0); }),
                                  {"step must be >= 1 (the first update is step 1), found 0", "Fix:"});
  berth::testing::expect_contains(message([] { berth::optim::adamw_scalars(1e-3, 1.0, 0.999, 1e-8, 0, 1); }),
                                  {"beta1 must be in [0, 1), found 1"});
  berth::testing::expect_contains(message([] { berth::optim::adamw_scalars(-1, 0.9, 0.999, 1e-8, 0, 1); }),
                                  {"lr must be >= 0, found -1"});
  berth::testing::expect_contains(
      message([] { berth::optim::adamw_scalars(1e-3, 0.9, 0.999, 1e-8, -0.1, 1); }),
      {"weight_decay must be >= 0, found -0.1"});
}

std::string step_error(at::Tensor p, at::Tensor g, at::Tensor m, at::Tensor v) {
  try {
    berth::optim::adamw_step(p, g, m, v, berth::optim::adamw_scalars(1e-3, 0.9, 0.999, 1e-8, 0.01, 1));
  } catch (const berth::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(AdamWKernel, TensorEntryPointUpdatesInPlaceAndBumpsVersions) {
  at::Tensor p = torch::full({3, 5}, 0.5F);
  const at::Tensor g = torch::full({15}, 0.25F);  // any shape of the same numel: flat shards' views
  at::Tensor m = torch::zeros({3, 5});
  at::Tensor v = torch::zeros({3, 5});
  const auto p_version = p._version(), m_version = m._version(), v_version = v._version();
  const AdamWStepScalars s = berth::optim::adamw_scalars(1e-2, 0.9, 0.999, 1e-8, 0.01, 1);
  berth::optim::adamw_step(p, g, m, v, s);
  EXPECT_GT(p._version(), p_version);
  EXPECT_GT(m._version(), m_version);
  EXPECT_GT(v._version(), v_version);
  // step 1: m = 0.1 g, v = 0.001 g^2, m_hat / sqrt(v_hat) = 1: p = 0.5 (1 - 1e-4) - 1e-2 (up to eps)
  EXPECT_NEAR(p[0][0].item<float>(), 0.5F * (1 - 1e-4F) - 1e-2F, 1e-6F);
  EXPECT_FLOAT_EQ(m[2][4].item<float>(), 0.025F);
  EXPECT_FLOAT_EQ(v[1][1].item<float>(), 0.001F * 0.25F * 0.25F);
  // an empty parameter is a no-op
  at::Tensor e = torch::zeros({0}), em = torch::zeros({0}), ev = torch::zeros({0});
  EXPECT_NO_THROW(berth::optim::adamw_step(e, torch::zeros({0}), em, ev, s));
}

TEST(AdamWKernel, TensorEntryPointRejectsWhatTheKernelCannotStep) {
  auto f = [](std::vector<int64_t> shape) { return torch::zeros(shape); };
  berth::testing::expect_contains(
      step_error(f({4}).to(torch::kFloat64), f({4}), f({4}), f({4})),
      {"adamw_step: param must be float32, found Double", "Fix: keep an fp32 master"});
  berth::testing::expect_contains(step_error(f({4}), f({4}).to(torch::kHalf), f({4}), f({4})),
                                  {"adamw_step: grad must be float32, found Half"});
  berth::testing::expect_contains(step_error(f({4}), f({5}), f({4}), f({4})),
                                  {"adamw_step: grad has 5 elements but param has 4", "Fix:"});
  berth::testing::expect_contains(step_error(f({4}), f({4}), f({4}), f({2})),
                                  {"adamw_step: exp_avg_sq has 2 elements but param has 4"});
  berth::testing::expect_contains(
      step_error(f({4, 6}).t(), f({6, 4}), f({6, 4}), f({6, 4})),
      {"adamw_step: param must be contiguous, found sizes [6, 4] with strides [1, 6]",
       "Fix: pass .contiguous() storage"});
  berth::testing::expect_contains(step_error(f({4}), f({4}), at::Tensor(), f({4})),
                                  {"adamw_step: exp_avg is an undefined tensor"});
  berth::testing::expect_contains(step_error(f({4}), f({4}), f({4}), f({4}).to_sparse()),
                                  {"adamw_step: exp_avg_sq must be a dense CPU tensor", "(sparse)"});
}

}  // namespace
