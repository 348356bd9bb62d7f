// Times one AdamW step over BERT-base-sized parameters: berth's fused AdamW, its torch-ops path and
// torch::optim::AdamW, against a STREAM-like loop moving the same bytes (the memory-bandwidth bound).
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "berth/optim/adamw.h"

namespace {

int arg_int(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  return fallback;
}

// BertForSequenceClassification (bert-base-uncased, 2 labels): 201 tensors, 109,483,778 floats.
std::vector<std::vector<int64_t>> bert_base_shapes() {
  const int64_t c = 768, ff = 3072;
  std::vector<std::vector<int64_t>> s{{30522, c}, {512, c}, {2, c}, {c}, {c}};  // embeddings + LayerNorm
  for (int layer = 0; layer < 12; ++layer) {
    for (int i = 0; i < 3; ++i) s.insert(s.end(), {{c, c}, {c}});  // query, key, value
    s.insert(s.end(), {{c, c}, {c}, {c}, {c}});                    // attention output dense + LayerNorm
    s.insert(s.end(), {{ff, c}, {ff}, {c, ff}, {c}, {c}, {c}});    // intermediate, output dense + LayerNorm
  }
  s.insert(s.end(), {{c, c}, {c}, {2, c}, {2}});  // pooler, classifier
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// One untimed warm-up call (it allocates optimizer state), then the median of `steps` timed calls, in ms.
double time_ms(int steps, const std::function<void()>& fn) {
  fn();
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return median(ms);
}

// Reads p, g, m, v and writes p, m, v once per element, as AdamW must at the least: 16 + 12 = 28 bytes.
void stream_loop(std::vector<at::Tensor>& p, const std::vector<at::Tensor>& g, std::vector<at::Tensor>& m,
                 std::vector<at::Tensor>& v) {
  for (std::size_t t = 0; t < p.size(); ++t) {
    float* pp = p[t].data_ptr<float>();
    const float* gp = g[t].data_ptr<float>();
    float* mp = m[t].data_ptr<float>();
    float* vp = v[t].data_ptr<float>();
    at::parallel_for(0, p[t].numel(), 1 << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float gi = gp[i];
        pp[i] = 0.5f * pp[i] + 0.25f * gi;
        mp[i] = 0.5f * mp[i] + 0.25f * gi;
        vp[i] = 0.5f * vp[i] + 0.25f * gi;
      }
    });
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = arg_int(argc, argv, "--threads", 0);
  const int steps = arg_int(argc, argv, "--steps", 5);
  if (threads > 0) at::set_num_threads(threads);
  torch::NoGradGuard no_grad;

  std::vector<at::Tensor> params;
  std::vector<at::Tensor> grads;
  std::vector<std::string> names;
  int64_t numel = 0;
  for (const auto& shape : bert_base_shapes()) {
    params.push_back(torch::randn(shape).mul_(0.02).requires_grad_(true));
    grads.push_back(torch::randn(shape).mul_(1e-3));
    params.back().mutable_grad() = grads.back();
    names.push_back("p" + std::to_string(names.size()));
    numel += params.back().numel();
  }
  // Two groups as HF Trainer makes them: 1-D tensors (biases, LayerNorm) without weight decay.
  berth::optim::NamedParamGroup decay{{}, {}, 0.01};
  berth::optim::NamedParamGroup no_decay{{}, {}, 0.0};
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto& group = params[i].dim() > 1 ? decay : no_decay;
    group.names.push_back(names[i]);
    group.params.push_back(params[i]);
  }
  const double bytes = 28.0 * static_cast<double>(numel);
  std::printf(
      "AdamW step over BERT-base-sized parameters: %zu tensors, %lld floats; %d threads; "
      "median of %d steps\n",
      params.size(), static_cast<long long>(numel), at::get_num_threads(), steps);
  std::printf(
      "bound: a STREAM-like loop reading p, g, m, v and writing p, m, v (28 B/param, %.2f GB/step)\n\n",
      bytes / 1e9);

  // One optimizer's state alive at a time (each holds 2 x 438 MB).
  double stream_ms = 0;
  {
    std::vector<at::Tensor> m, v;
    for (const at::Tensor& p : params) {
      m.push_back(torch::zeros_like(p));
      v.push_back(torch::zeros_like(p));
    }
    stream_ms = time_ms(steps, [&] { stream_loop(params, grads, m, v); });
  }
  berth::optim::AdamWOptions options;
  double fused_ms = 0, ops_ms = 0, torch_ms = 0;
  {
    berth::optim::AdamW fused({decay, no_decay}, options);
    fused_ms = time_ms(steps, [&] { fused.step(); });
    if (fused.fallback_updates() != 0) std::printf("warning: the fused path was not taken everywhere\n");
  }
  {
    berth::optim::AdamW ops({decay, no_decay}, options);
    ops.set_fused_enabled(false);
    ops_ms = time_ms(steps, [&] { ops.step(); });
  }
  {
    torch::optim::AdamWOptions decay_options(options.lr);
    decay_options.weight_decay(0.01);
    torch::optim::AdamWOptions no_decay_options(options.lr);
    no_decay_options.weight_decay(0.0);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay.params, std::make_unique<torch::optim::AdamWOptions>(decay_options));
    groups.emplace_back(no_decay.params, std::make_unique<torch::optim::AdamWOptions>(no_decay_options));
    torch::optim::AdamW theirs(std::move(groups), decay_options);
    torch_ms = time_ms(steps, [&] { theirs.step(); });
  }

  auto row = [&](const char* what, double ms) {
    std::printf("%-34s %9.1f ms  %6.1f GB/s  %5.2fx the bound  %5.2fx faster than torch\n", what, ms,
                bytes / ms / 1e6, ms / stream_ms, torch_ms / ms);
  };
  std::printf("%-34s %9s     %11s  %16s\n", "", "per step", "28 B/param", "");
  row("STREAM-like bound", stream_ms);
  row("berth AdamW (fused)", fused_ms);
  row("berth AdamW (torch-ops path)", ops_ms);
  row("torch::optim::AdamW", torch_ms);
  return 0;
}
