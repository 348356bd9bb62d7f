// The fused scale + mask + softmax + dropout kernel for attention, forward and backward, on CPU float32.
#include "berth/kernels/attention_softmax.h"

#include "berth/kernels/dropout.h"
#include "berth/kernels/fused.h"
#include "fast_exp.h"
#include "simd_clones.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <limits>

// Float compares may not trap here (berth never unmasks FP exceptions): without this GCC keeps the
// selects of the loops below as branches and does not vectorise them. Not -ffast-math: results stay
// IEEE-exact per operation.
#pragma GCC optimize("no-trapping-math")

namespace berth::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Eight partial sums so the reductions vectorise without -ffast-math (float addition is not associative,
// the compiler may not reorder a single accumulator).
constexpr int64_t kLanes = 8;

struct Shape {
  int64_t rows = 0;            // B·H·T
  int64_t cols = 0;            // S
  int64_t rows_per_batch = 0;  // H·T: rows sharing one mask row
};

// scores, mask: see attention_softmax. probs (rows, S) receives the softmax, out the dropped-out copy
// (may alias probs when p == 0).
BERTH_SIMD_CLONES void forward_rows(int64_t begin, int64_t end, const float* scores, const float* mask,
                                    float* probs, float* out, const Shape& s, float inv_divisor,
                                    uint64_t seed, uint32_t threshold, float keep_scale, bool drop) {
  for (int64_t r = begin; r < end; ++r) {
    const float* x = scores + r * s.cols;
    const float* m = mask + (r / s.rows_per_batch) * s.cols;
    float* y = probs + r * s.cols;
    float lane_max[kLanes];
    for (float& v : lane_max) v = -std::numeric_limits<float>::infinity();
    int64_t j = 0;
    for (; j + kLanes <= s.cols; j += kLanes) {
      for (int64_t k = 0; k < kLanes; ++k) {
        const float v = x[j + k] * inv_divisor + m[j + k];
        y[j + k] = v;
        lane_max[k] = v > lane_max[k] ? v : lane_max[k];
      }
    }
    float row_max = -std::numeric_limits<float>::infinity();
    for (; j < s.cols; ++j) {
      y[j] = x[j] * inv_divisor + m[j];
      row_max = y[j] > row_max ? y[j] : row_max;
    }
    for (float v : lane_max) row_max = v > row_max ? v : row_max;
    float lane_sum[kLanes] = {};
    j = 0;
    for (; j + kLanes <= s.cols; j += kLanes) {
      for (int64_t k = 0; k < kLanes; ++k) {
        const float e = detail::fast_exp(y[j + k] - row_max);
        y[j + k] = e;
        lane_sum[k] += e;
      }
    }
    float sum = 0.0f;
    for (; j < s.cols; ++j) {
      y[j] = detail::fast_exp(y[j] - row_max);
      sum += y[j];
    }
    for (float v : lane_sum) sum += v;
    const float inv_sum = 1.0f / sum;
    for (j = 0; j < s.cols; ++j) y[j] *= inv_sum;
    if (!drop) continue;
    float* o = out + r * s.cols;
    const auto base = static_cast<uint32_t>(r * s.cols);
    for (j = 0; j < s.cols; ++j) {
      const float keep = dropout_bits(seed, base + static_cast<uint32_t>(j)) >= threshold ? keep_scale : 0.0f;
      o[j] = y[j] * keep;
    }
  }
}

void forward_kernel(const float* scores, const float* mask, float* probs, float* out, const Shape& s,
                    float inv_divisor, uint64_t seed, uint32_t threshold, float keep_scale, bool drop) {
  at::parallel_for(0, s.rows, 16, [&](int64_t begin, int64_t end) {
    forward_rows(begin, end, scores, mask, probs, out, s, inv_divisor, seed, threshold, keep_scale, drop);
  });
}

// grad (rows, S) of the output, probs the saved softmax -> grad_scores (rows, S):
// g' = dropout'(g); dx = y·(g' − Σ g'·y); dscores = dx / divisor.
BERTH_SIMD_CLONES void backward_rows(int64_t begin, int64_t end, const float* grad, const float* probs,
                                     float* grad_scores, const Shape& s, float inv_divisor, uint64_t seed,
                                     uint32_t threshold, float keep_scale, bool drop) {
  for (int64_t r = begin; r < end; ++r) {
    const float* g = grad + r * s.cols;
    const float* y = probs + r * s.cols;
    float* d = grad_scores + r * s.cols;
    if (drop) {
      const auto base = static_cast<uint32_t>(r * s.cols);
      for (int64_t j = 0; j < s.cols; ++j) {
        const float keep =
            dropout_bits(seed, base + static_cast<uint32_t>(j)) >= threshold ? keep_scale : 0.0f;
        d[j] = g[j] * keep;
      }
    } else {
      for (int64_t j = 0; j < s.cols; ++j) d[j] = g[j];
    }
    float lane_dot[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= s.cols; j += kLanes)
      for (int64_t k = 0; k < kLanes; ++k) lane_dot[k] += d[j + k] * y[j + k];
    float dot = 0.0f;
    for (; j < s.cols; ++j) dot += d[j] * y[j];
    for (float v : lane_dot) dot += v;
    for (j = 0; j < s.cols; ++j) d[j] = y[j] * (d[j] - dot) * inv_divisor;
  }
}

void backward_kernel(const float* grad, const float* probs, float* grad_scores, const Shape& s,
                     float inv_divisor, uint64_t seed, uint32_t threshold, float keep_scale, bool drop) {
  at::parallel_for(0, s.rows, 16, [&](int64_t begin, int64_t end) {
    backward_rows(begin, end, grad, probs, grad_scores, s, inv_divisor, seed, threshold, keep_scale, drop);
  });
}

struct AttentionSoftmaxFunction : torch::autograd::Function<AttentionSoftmaxFunction> {
  // scores: (B, H, T, S) contiguous, mask: (B, 1, 1, S) -> (B, H, T, S)
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& scores, const at::Tensor& mask,
                            double divisor, double p) {
    at::Tensor x = scores.contiguous();
    at::Tensor m = mask.contiguous();
    const Shape shape{x.numel() / x.size(-1), x.size(-1), x.size(1) * x.size(2)};
    const bool drop = p > 0.0;
    const uint64_t seed = drop ? draw_dropout_seed() : 0;
    at::Tensor probs = at::empty_like(x);
    at::Tensor out = drop ? at::empty_like(x) : probs;
    forward_kernel(x.data_ptr<float>(), m.data_ptr<float>(), probs.data_ptr<float>(), out.data_ptr<float>(),
                   shape, static_cast<float>(1.0 / divisor), seed, dropout_threshold(p),
                   dropout_keep_scale(p), drop);
    ctx->save_for_backward({probs});
    ctx->saved_data["seed"] = static_cast<int64_t>(seed);
    ctx->saved_data["p"] = p;
    ctx->saved_data["divisor"] = divisor;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor probs = ctx->get_saved_variables()[0];
    const double p = ctx->saved_data["p"].toDouble();
    const double divisor = ctx->saved_data["divisor"].toDouble();
    const auto seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    at::Tensor grad = grads[0].contiguous();
    at::Tensor grad_scores = at::empty_like(probs);
    const Shape shape{probs.numel() / probs.size(-1), probs.size(-1), probs.size(1) * probs.size(2)};
    backward_kernel(grad.data_ptr<float>(), probs.data_ptr<float>(), grad_scores.data_ptr<float>(), shape,
                    static_cast<float>(1.0 / divisor), seed, dropout_threshold(p), dropout_keep_scale(p),
                    p > 0.0);
    return {grad_scores, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

bool fused_shapes(const at::Tensor& scores, const at::Tensor& mask) {
  if (scores.dim() != 4 || mask.dim() != 4 || mask.scalar_type() != at::kFloat) return false;
  if (!mask.device().is_cpu() || mask.requires_grad()) return false;
  const int64_t batch = scores.size(0), cols = scores.size(3);
  return mask.size(0) == batch && mask.size(1) == 1 && mask.size(2) == 1 && mask.size(3) == cols &&
         scores.numel() <= static_cast<int64_t>(std::numeric_limits<uint32_t>::max()) && cols > 0;
}

}  // namespace

at::Tensor attention_softmax(const at::Tensor& scores, const at::Tensor& mask, double divisor, double p,
                             bool training) {
  if (training && use_fused(scores) && fused_shapes(scores, mask))
    return AttentionSoftmaxFunction::apply(scores, mask, divisor, p);
  at::Tensor probs = torch::softmax(scores / divisor + mask, -1);
  return training && p > 0.0 ? torch::dropout(probs, p, true) : probs;
}

}  // namespace berth::kernels
