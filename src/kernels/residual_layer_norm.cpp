// The fused bias + dropout + residual + LayerNorm kernel, forward and backward, on CPU float32.
#include "berth/kernels/residual_layer_norm.h"

#include "berth/kernels/dropout.h"
#include "berth/kernels/fused.h"
#include "simd_clones.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

// Float compares may not trap here (berth never unmasks FP exceptions): without this GCC keeps the
// selects of the loops below as branches and does not vectorise them. Not -ffast-math: results stay
// IEEE-exact per operation.
#pragma GCC optimize("no-trapping-math")

namespace berth::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Partial sums in eight lanes so reductions vectorise without -ffast-math.
constexpr int64_t kLanes = 8;

float lane_sum(const float* v, int64_t n) {
  float lanes[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) lanes[k] += v[j + k];
  float sum = 0.0f;
  for (; j < n; ++j) sum += v[j];
  for (float s : lanes) sum += s;
  return sum;
}

struct Params {
  int64_t rows = 0, cols = 0;
  uint64_t seed = 0;
  uint32_t threshold = 0;
  float keep_scale = 1.0f;
  bool drop = false;
  float eps = 0.0f;
};

// h, r: (rows, C); b, gamma, beta: (C) -> out (rows, C), xhat (rows, C) normalised values, rstd (rows).
BERTH_SIMD_CLONES void forward_rows(int64_t begin, int64_t end, const float* __restrict__ h,
                                    const float* __restrict__ b, const float* __restrict__ r,
                                    const float* __restrict__ gamma, const float* __restrict__ beta,
                                    float* __restrict__ out, float* __restrict__ xhat,
                                    float* __restrict__ rstd, Params q) {
  for (int64_t i = begin; i < end; ++i) {
    const int64_t o = i * q.cols;
    float* v = xhat + o;
    if (q.drop) {
      const auto base = static_cast<uint32_t>(o);
      for (int64_t j = 0; j < q.cols; ++j) {
        const float keep =
            dropout_bits(q.seed, base + static_cast<uint32_t>(j)) >= q.threshold ? q.keep_scale : 0.0f;
        v[j] = (h[o + j] + b[j]) * keep + r[o + j];
      }
    } else {
      for (int64_t j = 0; j < q.cols; ++j) v[j] = h[o + j] + b[j] + r[o + j];
    }
    const float mean = lane_sum(v, q.cols) / static_cast<float>(q.cols);
    float lanes[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= q.cols; j += kLanes)
      for (int64_t k = 0; k < kLanes; ++k) {
        const float d = v[j + k] - mean;
        lanes[k] += d * d;
      }
    float var = 0.0f;
    for (; j < q.cols; ++j) var += (v[j] - mean) * (v[j] - mean);
    for (float s : lanes) var += s;
    const float inv = 1.0f / std::sqrt(var / static_cast<float>(q.cols) + q.eps);
    rstd[i] = inv;
    for (j = 0; j < q.cols; ++j) {
      const float x = (v[j] - mean) * inv;
      v[j] = x;
      out[o + j] = x * gamma[j] + beta[j];
    }
  }
}

void forward_kernel(const float* h, const float* b, const float* r, const float* gamma, const float* beta,
                    float* out, float* xhat, float* rstd, const Params& q) {
  at::parallel_for(0, q.rows, 8, [&](int64_t begin, int64_t end) {
    forward_rows(begin, end, h, b, r, gamma, beta, out, xhat, rstd, q);
  });
}

// Rows [row_begin, row_end) of backward_kernel; pb, pg, pbeta: this chunk's partial sums of grad_b,
// grad_gamma, grad_beta (C each); dx: C floats of scratch. No two arrays overlap (__restrict__), or GCC
// checks every pair at run time and leaves most loops scalar; q comes by value for the same reason (a float
// store could change q.keep_scale through a reference, so the dropout loop would not vectorise).
BERTH_SIMD_CLONES void backward_rows(int64_t row_begin, int64_t row_end, const float* __restrict__ g,
                                     const float* __restrict__ xhat, const float* __restrict__ rstd,
                                     const float* __restrict__ gamma, float* __restrict__ grad_h,
                                     float* __restrict__ grad_r, float* __restrict__ pb,
                                     float* __restrict__ pg, float* __restrict__ pbeta,
                                     float* __restrict__ dx, Params q) {
  for (int64_t i = row_begin; i < row_end; ++i) {
    const int64_t o = i * q.cols;
    const float* gi = g + o;
    const float* xi = xhat + o;
    float lanes_a[kLanes] = {}, lanes_b[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= q.cols; j += kLanes)
      for (int64_t k = 0; k < kLanes; ++k) {
        const float d = gi[j + k] * gamma[j + k];
        dx[j + k] = d;
        lanes_a[k] += d;
        lanes_b[k] += d * xi[j + k];
      }
    float a = 0.0f, b = 0.0f;
    for (; j < q.cols; ++j) {
      dx[j] = gi[j] * gamma[j];
      a += dx[j];
      b += dx[j] * xi[j];
    }
    for (int64_t k = 0; k < kLanes; ++k) {
      a += lanes_a[k];
      b += lanes_b[k];
    }
    a /= static_cast<float>(q.cols);
    b /= static_cast<float>(q.cols);
    const float inv = rstd[i];
    for (j = 0; j < q.cols; ++j) {
      const float dv = inv * (dx[j] - a - xi[j] * b);
      grad_r[o + j] = dv;
      pg[j] += gi[j] * xi[j];
      pbeta[j] += gi[j];
    }
    if (q.drop) {
      const auto base = static_cast<uint32_t>(o);
      for (j = 0; j < q.cols; ++j) {
        const float keep =
            dropout_bits(q.seed, base + static_cast<uint32_t>(j)) >= q.threshold ? q.keep_scale : 0.0f;
        grad_h[o + j] = grad_r[o + j] * keep;
      }
    } else {
      for (j = 0; j < q.cols; ++j) grad_h[o + j] = grad_r[o + j];
    }
    for (j = 0; j < q.cols; ++j) pb[j] += grad_h[o + j];
  }
}

// g (rows, C) -> grad_h = grad of hidden, grad_r = grad of residual (rows, C); grad_b, grad_gamma,
// grad_beta (C) summed over rows, each thread into its own slice of `partial` first.
void backward_kernel(const float* g, const float* xhat, const float* rstd, const float* gamma, float* grad_h,
                     float* grad_r, float* grad_b, float* grad_gamma, float* grad_beta, const Params& q) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(q.rows, at::get_num_threads()));
  std::vector<float> partial(static_cast<size_t>(chunks * 3 * q.cols), 0.0f);
  at::parallel_for(0, chunks, 1, [&](int64_t chunk_begin, int64_t chunk_end) {
    std::vector<float> dx(static_cast<size_t>(q.cols));
    for (int64_t c = chunk_begin; c < chunk_end; ++c) {
      float* pb = partial.data() + c * 3 * q.cols;
      backward_rows(q.rows * c / chunks, q.rows * (c + 1) / chunks, g, xhat, rstd, gamma, grad_h, grad_r, pb,
                    pb + q.cols, pb + 2 * q.cols, dx.data(), q);
    }
  });
  std::fill(grad_b, grad_b + q.cols, 0.0f);
  std::fill(grad_gamma, grad_gamma + q.cols, 0.0f);
  std::fill(grad_beta, grad_beta + q.cols, 0.0f);
  for (int64_t c = 0; c < chunks; ++c) {
    const float* pb = partial.data() + c * 3 * q.cols;
    for (int64_t j = 0; j < q.cols; ++j) {
      grad_b[j] += pb[j];
      grad_gamma[j] += pb[q.cols + j];
      grad_beta[j] += pb[2 * q.cols + j];
    }
  }
}

struct ResidualLayerNormFunction : torch::autograd::Function<ResidualLayerNormFunction> {
  // hidden, residual: (..., C); bias, gamma, beta: (C) -> (..., C)
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& hidden, const at::Tensor& bias,
                            const at::Tensor& residual, const at::Tensor& gamma, const at::Tensor& beta,
                            double eps, double p) {
    at::Tensor h = hidden.contiguous(), r = residual.contiguous();
    at::Tensor b = bias.contiguous(), w = gamma.contiguous(), be = beta.contiguous();
    Params q;
    q.cols = h.size(-1);
    q.rows = h.numel() / q.cols;
    q.drop = p > 0.0;
    q.seed = q.drop ? draw_dropout_seed() : 0;
    q.threshold = dropout_threshold(p);
    q.keep_scale = dropout_keep_scale(p);
    q.eps = static_cast<float>(eps);
    at::Tensor out = at::empty_like(h);
    at::Tensor xhat = at::empty_like(h);
    at::Tensor rstd = at::empty({q.rows}, h.options());
    forward_kernel(h.data_ptr<float>(), b.data_ptr<float>(), r.data_ptr<float>(), w.data_ptr<float>(),
                   be.data_ptr<float>(), out.data_ptr<float>(), xhat.data_ptr<float>(),
                   rstd.data_ptr<float>(), q);
    ctx->save_for_backward({xhat, rstd, w});
    ctx->saved_data["seed"] = static_cast<int64_t>(q.seed);
    ctx->saved_data["p"] = p;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& xhat = saved[0];
    const at::Tensor& rstd = saved[1];
    const at::Tensor& gamma = saved[2];
    const double p = ctx->saved_data["p"].toDouble();
    Params q;
    q.cols = xhat.size(-1);
    q.rows = xhat.numel() / q.cols;
    q.drop = p > 0.0;
    q.seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    q.threshold = dropout_threshold(p);
    q.keep_scale = dropout_keep_scale(p);
    at::Tensor g = grads[0].contiguous();
    at::Tensor grad_h = at::empty_like(xhat), grad_r = at::empty_like(xhat);
    at::Tensor grad_b = at::empty({q.cols}, xhat.options());
    at::Tensor grad_gamma = at::empty({q.cols}, xhat.options()),
               grad_beta = at::empty({q.cols}, xhat.options());
    backward_kernel(g.data_ptr<float>(), xhat.data_ptr<float>(), rstd.data_ptr<float>(),
                    gamma.data_ptr<float>(), grad_h.data_ptr<float>(), grad_r.data_ptr<float>(),
                    grad_b.data_ptr<float>(), grad_gamma.data_ptr<float>(), grad_beta.data_ptr<float>(), q);
    return {grad_h, grad_b, grad_r, grad_gamma, grad_beta, at::Tensor(), at::Tensor()};
  }
};

bool fused_shapes(const at::Tensor& hidden, const at::Tensor& bias, const at::Tensor& residual,
                  const at::Tensor& gamma, const at::Tensor& beta) {
  const int64_t cols = hidden.dim() >= 1 ? hidden.size(-1) : 0;
  for (const at::Tensor* t : {&bias, &residual, &gamma, &beta})
    if (!t->defined() || !t->device().is_cpu() || t->scalar_type() != at::kFloat) return false;
  return cols > 0 && residual.sizes() == hidden.sizes() && bias.dim() == 1 && bias.size(0) == cols &&
         gamma.dim() == 1 && gamma.size(0) == cols && beta.dim() == 1 && beta.size(0) == cols &&
         hidden.numel() <= static_cast<int64_t>(std::numeric_limits<uint32_t>::max());
}

}  // namespace

at::Tensor residual_layer_norm(const at::Tensor& hidden, const at::Tensor& bias, const at::Tensor& residual,
                               const at::Tensor& gamma, const at::Tensor& beta, double eps, double p,
                               bool training) {
  if (training && use_fused(hidden) && fused_shapes(hidden, bias, residual, gamma, beta))
    return ResidualLayerNormFunction::apply(hidden, bias, residual, gamma, beta, eps, p);
  at::Tensor x = hidden + bias;
  if (training && p > 0.0) x = torch::dropout(x, p, true);
  return torch::layer_norm(x + residual, {hidden.size(-1)}, gamma, beta, eps);
}

}  // namespace berth::kernels
