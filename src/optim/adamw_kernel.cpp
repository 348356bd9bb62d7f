// The fused AdamW step: scalars as torch rounds them, the ISA dispatch, and the split of one pass over
// p, g, m, v across threads. Built with -fno-math-errno -ffp-contract=off (src/CMakeLists.txt).
#include "optim/adamw_kernel.h"

#include "berth/core/error.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace berth::optim {
namespace detail {

// Each line is one torch op of torch.optim.AdamW (single-tensor path), in its evaluation order and with its
// roundings: lerp_ and addcmul_ are one fused multiply-add each (ATen's Vectorized fmadd), div_ a true
// division, so m and v equal the pinned torch 2.15's bit for bit. Only sqrt differs: berth's is exact, the
// PyPI torch's comes from MKL's vector math and is an ulp off for about one element in six, which moves p by
// as much. std::fma is correctly rounded everywhere (one instruction on FMA hardware, a libm call on old
// x86).
void adamw_chunk_scalar(float* __restrict p, const float* __restrict g, float* __restrict m,
                        float* __restrict v, int64_t n, const AdamWStepScalars& scalars) {
  const AdamWStepScalars s = scalars;
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi =
        std::fma(s.lerp_coeff, gi - m[i], s.lerp_from_grad ? gi : m[i]);  // exp_avg.lerp_(g, 1-b1)
    // exp_avg_sq.mul_(b2).addcmul_(g, g, 1-b2): fma((1-b2) * g, g, v * b2); scaling g first keeps |g| up to
    // ~1e20 from overflowing
    const float vi = std::fma(s.one_minus_beta2 * gi, gi, v[i] * s.beta2);
    const float denom = std::sqrt(vi) / s.bias_correction2_sqrt + s.eps;  // (v.sqrt() / sqrt(bc2)).add_(eps)
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * s.decay + s.neg_step_size * mi / denom;  // p.mul_(1-lr*wd); p.addcdiv_(m, denom, -step)
  }
}

}  // namespace detail

namespace {

using ChunkFn = void (*)(float*, const float*, float*, float*, int64_t, const AdamWStepScalars&);

struct Isa {
  const char* name;
  ChunkFn fn;
  bool supported;
};

std::vector<Isa> isas() {
  std::vector<Isa> out;
#if defined(__x86_64__)
  __builtin_cpu_init();
  out.push_back({"avx512", detail::adamw_chunk_avx512, __builtin_cpu_supports("avx512f") != 0});
  out.push_back({"avx2", detail::adamw_chunk_avx2,
                 __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0});
#endif
  out.push_back({"scalar", detail::adamw_chunk_scalar, true});
  return out;
}

const Isa& isa_named(const std::string& name, const char* origin) {
  static const std::vector<Isa> all = isas();
  for (const Isa& isa : all) {
    if (name != isa.name) continue;
    BERTH_CHECK(isa.supported, origin, ": the AdamW kernel '", name, "' needs a CPU with ",
                name == "avx512" ? "AVX-512F" : "AVX2 and FMA", ", which this one lacks. Fix: use one of ",
                "berth::optim::adamw_kernel_available_isas() (or unset BERTH_ADAMW_ISA)");
    return isa;
  }
  BERTH_FAIL(origin, ": unknown AdamW kernel '", name, "', expected avx512, avx2 or scalar",
             ". Fix: ", "use one of those names");
}

// Decided once: BERTH_ADAMW_ISA if set, else the best the CPU has.
const Isa& dispatched() {
  static const Isa& picked = []() -> const Isa& {
    const char* forced = std::getenv("BERTH_ADAMW_ISA");
    if (forced != nullptr && *forced != '\0') return isa_named(forced, "BERTH_ADAMW_ISA");
    static const std::vector<Isa> all = isas();
    for (const Isa& isa : all)
      if (isa.supported) return isa_named(isa.name, "AdamW kernel dispatch");
    BERTH_BUG(false, "the scalar AdamW kernel is always supported");
    return all.back();
  }();
  return picked;
}

// 16 B read + 12 B written per element: below this a thread's start-up costs more than it saves.
constexpr int64_t kGrain = 1 << 15;
// Chunks start at multiples of 16 floats (64 bytes) from the array's start: on torch's 64-byte-aligned
// storage, two threads never write one cache line.
constexpr int64_t kAlign = 16;

void run(ChunkFn fn, float* p, const float* g, float* m, float* v, int64_t n, const AdamWStepScalars& s) {
  if (n <= 0) return;
  const int64_t threads = at::in_parallel_region() ? 1 : std::max<int64_t>(1, at::get_num_threads());
  const int64_t chunks = std::min(threads, (n + kGrain - 1) / kGrain);
  if (chunks <= 1) {
    fn(p, g, m, v, n, s);
    return;
  }
  // One contiguous chunk per thread (the element-wise update needs no balancing beyond equal sizes).
  const int64_t per_chunk = ((n + chunks - 1) / chunks + kAlign - 1) / kAlign * kAlign;
  at::parallel_for(0, chunks, 1, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      const int64_t begin = c * per_chunk;
      const int64_t end = std::min(n, begin + per_chunk);
      if (begin < end) fn(p + begin, g + begin, m + begin, v + begin, end - begin, s);
    }
  });
}

void check_tensor(const at::Tensor& t, const char* what, int64_t numel) {
  BERTH_CHECK(t.defined(), "adamw_step: ", what, " is an undefined tensor. Fix: pass a float32 CPU tensor");
  BERTH_CHECK(t.device().is_cpu() && !t.is_sparse(), "adamw_step: ", what,
              " must be a dense CPU tensor, found one on ", t.device(), t.is_sparse() ? " (sparse)" : "",
              ". Fix: move it to the CPU (.cpu()) or use torch ops there");
  BERTH_CHECK(t.scalar_type() == at::kFloat, "adamw_step: ", what, " must be float32, found ",
              t.scalar_type(), ". Fix: keep an fp32 master copy and step that");
  BERTH_CHECK(t.is_contiguous(), "adamw_step: ", what, " must be contiguous, found sizes ", t.sizes(),
              " with strides ", t.strides(),
              ". Fix: pass .contiguous() storage (a copy would not be updated)");
  BERTH_CHECK(t.numel() == numel, "adamw_step: ", what, " has ", t.numel(), " elements but param has ", numel,
              ". Fix: pass grad and state tensors of the parameter's size");
}

}  // namespace

AdamWStepScalars adamw_scalars(double lr, double beta1, double beta2, double eps, double weight_decay,
                               int64_t step) {
  BERTH_CHECK(step >= 1, "adamw_scalars: step must be >= 1 (the first update is step 1), found ", step,
              ". Fix: increment the step count before the update, as torch does");
  BERTH_CHECK(lr >= 0, "adamw_scalars: lr must be >= 0, found ", lr, ". Fix: pass a learning rate >= 0");
  BERTH_CHECK(beta1 >= 0 && beta1 < 1, "adamw_scalars: beta1 must be in [0, 1), found ", beta1,
              ". Fix: use e.g. 0.9");
  BERTH_CHECK(beta2 >= 0 && beta2 < 1, "adamw_scalars: beta2 must be in [0, 1), found ", beta2,
              ". Fix: use e.g. 0.999");
  BERTH_CHECK(eps >= 0, "adamw_scalars: eps must be >= 0, found ", eps, ". Fix: use e.g. 1e-8");
  BERTH_CHECK(weight_decay >= 0, "adamw_scalars: weight_decay must be >= 0, found ", weight_decay,
              ". Fix: use e.g. 0.01 or 0");
  // torch computes these in Python floats (double) and passes them to float32 kernels as scalars.
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
  AdamWStepScalars s;
  s.decay = static_cast<float>(1 - lr * weight_decay);
  s.beta1 = static_cast<float>(beta1);
  s.one_minus_beta1 = static_cast<float>(1 - beta1);
  s.lerp_from_grad = !(std::fabs(s.one_minus_beta1) < 0.5F);
  s.lerp_coeff = s.lerp_from_grad ? s.one_minus_beta1 - 1.0F : s.one_minus_beta1;
  s.beta2 = static_cast<float>(beta2);
  s.one_minus_beta2 = static_cast<float>(1 - beta2);
  s.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  s.eps = static_cast<float>(eps);
  s.neg_step_size = static_cast<float>(-(lr / bias_correction1));
  return s;
}

void adamw_step_flat(float* p, const float* g, float* m, float* v, int64_t n, const AdamWStepScalars& s) {
  run(dispatched().fn, p, g, m, v, n, s);
}

void adamw_step_flat_isa(const std::string& isa, float* p, const float* g, float* m, float* v, int64_t n,
                         const AdamWStepScalars& s) {
  run(isa_named(isa, "adamw_step_flat_isa").fn, p, g, m, v, n, s);
}

void adamw_step(at::Tensor& p, const at::Tensor& g, at::Tensor& m, at::Tensor& v, const AdamWStepScalars& s) {
  check_tensor(p, "param", p.defined() ? p.numel() : 0);
  check_tensor(g, "grad", p.numel());
  check_tensor(m, "exp_avg", p.numel());
  check_tensor(v, "exp_avg_sq", p.numel());
  adamw_step_flat(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
                  p.numel(), s);
  // Written through raw pointers: bump the version counters as torch's in-place ops would, so autograd
  // still notices a parameter changed under a saved graph.
  for (const at::Tensor* t : {&p, &m, &v}) t->unsafeGetTensorImpl()->bump_version();
}

std::string adamw_kernel_isa() { return dispatched().name; }

std::vector<std::string> adamw_kernel_available_isas() {
  std::vector<std::string> out;
  for (const Isa& isa : isas())
    if (isa.supported) out.emplace_back(isa.name);
  return out;
}

}  // namespace berth::optim
