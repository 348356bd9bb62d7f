// The fused bias + exact GELU kernel, forward and backward, on CPU float32.
#include "berth/kernels/bias_gelu.h"

#include "berth/kernels/fused.h"
#include "fast_exp.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <vector>

// Float compares may not trap here (berth never unmasks FP exceptions): without this GCC keeps the
// selects of the loops below as branches and does not vectorise them. Not -ffast-math: results stay
// IEEE-exact per operation.
#pragma GCC optimize("no-trapping-math")

namespace berth::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// erfc(z) with relative error below 1.2e-7 (Numerical Recipes' Chebyshev fit), branch-free so loops
// vectorise. Φ(u) = erfc(−u/√2)/2 keeps GELU's far negative tail accurate (1 − erfc(u/√2)/2 would cancel).
inline float fast_erfc(float z) {
  const float a = z < 0.0f ? -z : z;
  const float t = 1.0f / (1.0f + 0.5f * a);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float r = t * detail::fast_exp(-a * a + p);
  return z >= 0.0f ? r : 2.0f - r;
}

// h (rows, N), b (N) -> out (rows, N)
void forward_kernel(const float* h, const float* b, float* out, int64_t rows, int64_t cols) {
  at::parallel_for(0, rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* hi = h + i * cols;
      float* oi = out + i * cols;
      for (int64_t j = 0; j < cols; ++j) {
        const float u = hi[j] + b[j];
        oi[j] = u * (0.5f * fast_erfc(-u * kInvSqrt2));
      }
    }
  });
}

// g, h (rows, N), b (N) -> grad_h (rows, N), grad_b (N): gelu'(u) = Φ(u) + u·φ(u).
void backward_kernel(const float* g, const float* h, const float* b, float* grad_h, float* grad_b,
                     int64_t rows, int64_t cols) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(rows, at::get_num_threads()));
  std::vector<float> partial(static_cast<size_t>(chunks * cols), 0.0f);
  at::parallel_for(0, chunks, 1, [&](int64_t chunk_begin, int64_t chunk_end) {
    for (int64_t c = chunk_begin; c < chunk_end; ++c) {
      float* pb = partial.data() + c * cols;
      for (int64_t i = rows * c / chunks; i < rows * (c + 1) / chunks; ++i) {
        const float* gi = g + i * cols;
        const float* hi = h + i * cols;
        float* di = grad_h + i * cols;
        for (int64_t j = 0; j < cols; ++j) {
          const float u = hi[j] + b[j];
          const float cdf = 0.5f * fast_erfc(-u * kInvSqrt2);
          const float pdf = kInvSqrt2Pi * detail::fast_exp(-0.5f * u * u);
          const float d = gi[j] * (cdf + u * pdf);
          di[j] = d;
          pb[j] += d;
        }
      }
    }
  });
  std::fill(grad_b, grad_b + cols, 0.0f);
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t j = 0; j < cols; ++j) grad_b[j] += partial[static_cast<size_t>(c * cols + j)];
}

struct BiasGeluFunction : torch::autograd::Function<BiasGeluFunction> {
  // hidden: (..., N), bias: (N) -> (..., N)
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& hidden, const at::Tensor& bias) {
    at::Tensor h = hidden.contiguous(), b = bias.contiguous();
    const int64_t cols = h.size(-1);
    at::Tensor out = at::empty_like(h);
    forward_kernel(h.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), h.numel() / cols, cols);
    ctx->save_for_backward({h, b});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& h = saved[0];
    const at::Tensor& b = saved[1];
    const int64_t cols = h.size(-1);
    at::Tensor g = grads[0].contiguous();
    at::Tensor grad_h = at::empty_like(h);
    at::Tensor grad_b = at::empty({cols}, h.options());
    backward_kernel(g.data_ptr<float>(), h.data_ptr<float>(), b.data_ptr<float>(), grad_h.data_ptr<float>(),
                    grad_b.data_ptr<float>(), h.numel() / cols, cols);
    return {grad_h, grad_b};
  }
};

}  // namespace

at::Tensor bias_gelu(const at::Tensor& hidden, const at::Tensor& bias, bool training) {
  const bool fits = hidden.dim() >= 1 && bias.defined() && bias.dim() == 1 &&
                    bias.size(0) == hidden.size(-1) && bias.device().is_cpu() &&
                    bias.scalar_type() == at::kFloat;
  if (training && use_fused(hidden) && fits) return BiasGeluFunction::apply(hidden, bias);
  return torch::gelu(hidden + bias);
}

}  // namespace berth::kernels
