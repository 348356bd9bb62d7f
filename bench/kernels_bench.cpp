// Times each fused CPU kernel (forward + backward) against the plain torch ops it replaces, at bert-mini's
// training shapes (batch 8 × 128 tokens); prints one JSON line per kernel with the fastest of REPS runs of
// each, alternating, so a shared machine's load hits both alike.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>

#include "berth/kernels/attention_softmax.h"
#include "berth/kernels/bias_gelu.h"
#include "berth/kernels/dropout.h"
#include "berth/kernels/fused.h"
#include "berth/kernels/residual_layer_norm.h"

namespace {

double time_ms(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Runs fn with the fused kernels on and off, alternating, reps times each; prints the fastest of each.
void compare(const char* name, int reps, const std::function<void()>& fn) {
  double fused = std::numeric_limits<double>::infinity(), plain = fused;
  for (int r = 0; r < reps; ++r) {
    berth::kernels::set_fused_enabled(true);
    fused = std::min(fused, time_ms(fn));
    berth::kernels::set_fused_enabled(false);
    plain = std::min(plain, time_ms(fn));
  }
  berth::kernels::set_fused_enabled(true);
  std::printf("{\"kernel\": \"%s\", \"fused_ms\": %.3f, \"plain_ms\": %.3f, \"speedup\": %.2f}\n", name,
              fused, plain, plain / fused);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int64_t B = 8, T = 128, H = 4, C = 256, I = 1024;
  torch::manual_seed(0);
  at::Tensor scores = torch::randn({B, H, T, T}).requires_grad_(true);
  at::Tensor mask = torch::zeros({B, 1, 1, T});
  compare("attention_softmax (scale+mask+softmax+dropout 0.1)", reps,
          [&] { berth::kernels::attention_softmax(scores, mask, 8.0, 0.1, true).sum().backward(); });
  at::Tensor x = torch::randn({B, T, C}).requires_grad_(true);
  compare("dropout 0.1", reps, [&] { berth::kernels::dropout(x, 0.1, true).sum().backward(); });
  at::Tensor h = torch::randn({B, T, C}).requires_grad_(true), b = torch::randn({C}).requires_grad_(true);
  at::Tensor res = torch::randn({B, T, C}).requires_grad_(true);
  at::Tensor g = torch::ones({C}).requires_grad_(true), be = torch::zeros({C}).requires_grad_(true);
  compare("residual_layer_norm (bias+dropout 0.1+residual+LayerNorm)", reps,
          [&] { berth::kernels::residual_layer_norm(h, b, res, g, be, 1e-12, 0.1, true).sum().backward(); });
  at::Tensor hi = torch::randn({B, T, I}).requires_grad_(true), bi = torch::randn({I}).requires_grad_(true);
  compare("bias_gelu", reps, [&] { berth::kernels::bias_gelu(hi, bi, true).sum().backward(); });
  return 0;
}
