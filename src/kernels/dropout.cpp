// The counter-based dropout kernel and its autograd Function (backward recomputes the mask).
#include "berth/kernels/dropout.h"

#include "berth/kernels/fused.h"
#include "simd_clones.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <limits>
#include <mutex>

// Float compares may not trap here (berth never unmasks FP exceptions): without this GCC keeps the
// selects of the loops below as branches and does not vectorise them. Not -ffast-math: results stay
// IEEE-exact per operation.
#pragma GCC optimize("no-trapping-math")

namespace berth::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// in, out: n floats. Forward and backward are the same map, out[i] = keep(i) ? in[i] * scale : 0, since
// the gradient of a kept element is scaled like its value.
BERTH_SIMD_CLONES void mask_range(int64_t begin, int64_t end, const float* in, float* out, uint64_t seed,
                                  uint32_t threshold, float scale) {
  for (int64_t i = begin; i < end; ++i) {
    const float keep = dropout_bits(seed, static_cast<uint32_t>(i)) >= threshold ? scale : 0.0f;
    out[i] = in[i] * keep;
  }
}

void apply_mask(const float* in, float* out, int64_t n, uint64_t seed, uint32_t threshold, float scale) {
  at::parallel_for(0, n, 16384, [&](int64_t begin, int64_t end) {
    mask_range(begin, end, in, out, seed, threshold, scale);
  });
}

struct DropoutFunction : torch::autograd::Function<DropoutFunction> {
  // x: any shape -> same shape
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, double p) {
    const uint64_t seed = draw_dropout_seed();
    at::Tensor in = x.contiguous();
    at::Tensor out = at::empty_like(in);
    apply_mask(in.data_ptr<float>(), out.data_ptr<float>(), in.numel(), seed, dropout_threshold(p),
               dropout_keep_scale(p));
    ctx->saved_data["seed"] = static_cast<int64_t>(seed);
    ctx->saved_data["p"] = p;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const double p = ctx->saved_data["p"].toDouble();
    const auto seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    at::Tensor grad = grads[0].contiguous();
    at::Tensor grad_in = at::empty_like(grad);
    apply_mask(grad.data_ptr<float>(), grad_in.data_ptr<float>(), grad.numel(), seed, dropout_threshold(p),
               dropout_keep_scale(p));
    return {grad_in, at::Tensor()};
  }
};

}  // namespace

uint64_t draw_dropout_seed() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<at::CPUGeneratorImpl>()->random64();
}

at::Tensor dropout(const at::Tensor& x, double p, bool training) {
  if (!training || p == 0.0) return x;
  const bool fits = x.numel() <= static_cast<int64_t>(std::numeric_limits<uint32_t>::max());
  if (!use_fused(x) || !fits) return torch::dropout(x, p, training);
  return DropoutFunction::apply(x, p);
}

}  // namespace berth::kernels
