// Times a bert-mini-sized training step under one threading setting; bench/threading.sh runs the matrix.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "berth/core/blas_info.h"

namespace {

// One post-LayerNorm encoder layer, HF BERT's shape: x (B, T, C) -> (B, T, C).
struct LayerImpl : torch::nn::Module {
  LayerImpl(int64_t c, int64_t heads)
      : heads(heads),
        qkv(register_module("qkv", torch::nn::Linear(c, 3 * c))),
        out(register_module("out", torch::nn::Linear(c, c))),
        ln1(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c})))),
        up(register_module("up", torch::nn::Linear(c, 4 * c))),
        down(register_module("down", torch::nn::Linear(4 * c, c))),
        ln2(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c})))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    auto b = x.size(0), t = x.size(1), c = x.size(2), d = c / heads;
    auto q_k_v = qkv(x).view({b, t, 3, heads, d}).permute({2, 0, 3, 1, 4});  // (3, B, H, T, D)
    auto att = torch::softmax(torch::matmul(q_k_v[0], q_k_v[1].transpose(-1, -2)) / std::sqrt(double(d)), -1);
    att = torch::dropout(att, 0.1, is_training());
    auto y = torch::matmul(att, q_k_v[2]).transpose(1, 2).reshape({b, t, c});  // (B, T, C)
    auto h = ln1(x + torch::dropout(out(y), 0.1, is_training()));
    return ln2(h + torch::dropout(down(torch::gelu(up(h))), 0.1, is_training()));
  }

  int64_t heads;
  torch::nn::Linear qkv, out;
  torch::nn::LayerNorm ln1;
  torch::nn::Linear up, down;
  torch::nn::LayerNorm ln2;
};
TORCH_MODULE(Layer);

int arg_int(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = arg_int(argc, argv, "--threads", 0);
  int blas_threads = arg_int(argc, argv, "--blas-threads", 0);
  int steps = arg_int(argc, argv, "--steps", 12);
  if (threads > 0) at::set_num_threads(threads);
  if (blas_threads > 0) berth::set_blas_threads(blas_threads);

  const int64_t batch = 8, seq = 128, hidden = 256, layers = 4;
  torch::manual_seed(0);
  torch::nn::Sequential model;
  for (int i = 0; i < layers; ++i) model->push_back(Layer(hidden, 4));
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-4));
  auto x = torch::randn({batch, seq, hidden});

  std::vector<double> ms;
  for (int s = 0; s < steps + 2; ++s) {
    auto start = std::chrono::steady_clock::now();
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
    auto loss = model->forward(x).square().mean();
    loss.backward();
    opt.step();
    double elapsed =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (s >= 2) ms.push_back(elapsed);  // the first steps allocate and warm caches
  }
  std::sort(ms.begin(), ms.end());
  auto blas = berth::query_blas();
  const char* wait = std::getenv("OMP_WAIT_POLICY");
  std::printf(
      "{\"intra_op_threads\": %d, \"blas\": \"%s\", \"blas_threads\": %d, \"omp_wait_policy\": \"%s\", "
      "\"median_step_ms\": %.1f, \"samples_per_second\": %.2f}\n",
      at::get_num_threads(), berth::to_string(blas.kind).c_str(), blas.num_threads.value_or(-1),
      wait ? wait : "unset", ms[ms.size() / 2], batch * 1000.0 / ms[ms.size() / 2]);
  return 0;
}
