// Times one AdamW step over BERT-base's 109.5M float32 parameters, as one flat buffer and as its 201 tensors:
// berth's fused kernel (each ISA this CPU has), berth::optim::AdamW, torch's fused kernel (_fused_adamw_,
// what torch.optim.AdamW(fused=True) runs) and torch::optim::AdamW, against a STREAM-like loop moving the
// same bytes (the memory-bandwidth bound), all in the same run on the same data.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "berth/optim/adamw.h"
#include "berth/optim/adamw_kernel.h"

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

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

double ms_of(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The variants of one layout, timed in interleaved rounds (one step of each per round) so drift in the
// machine's load hits them alike; one untimed warm-up round first (it allocates torch's optimizer state).
struct Variant {
  std::string key;    // JSON field prefix
  std::string label;  // table row
  std::function<void()> step;
  std::vector<double> ms;
};

void time_rounds(std::vector<Variant>& variants, int reps) {
  for (Variant& v : variants) v.step();
  for (int r = 0; r < reps; ++r)
    for (Variant& v : variants) v.ms.push_back(ms_of(v.step));
}

// Reads p, g, m, v and writes p, m, v once per element, as AdamW must at the least: 16 + 12 = 28 bytes.
// Split like the kernel: one contiguous chunk per thread.
void stream_loop(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                 int64_t n) {
  const int64_t threads = std::max(1, at::get_num_threads());
  at::parallel_for(0, n, std::max<int64_t>(1 << 15, (n + threads - 1) / threads),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i) {
                       const float gi = g[i];
                       p[i] = 0.5f * p[i] + 0.25f * gi;
                       m[i] = 0.5f * m[i] + 0.25f * gi;
                       v[i] = 0.5f * v[i] + 0.25f * gi;
                     }
                   });
}

struct Buffers {
  std::vector<at::Tensor> p, g, m, v;
};

Buffers make_buffers(const std::vector<std::vector<int64_t>>& shapes) {
  Buffers b;
  for (const auto& shape : shapes) {
    b.p.push_back(torch::randn(shape).mul_(0.02));
    b.g.push_back(torch::randn(shape).mul_(1e-3));
    b.m.push_back(torch::zeros(shape));
    b.v.push_back(torch::zeros(shape));
  }
  return b;
}

void each_tensor(Buffers& b, const std::function<void(float*, const float*, float*, float*, int64_t)>& fn) {
  for (std::size_t t = 0; t < b.p.size(); ++t)
    fn(b.p[t].data_ptr<float>(), b.g[t].data_ptr<float>(), b.m[t].data_ptr<float>(), b.v[t].data_ptr<float>(),
       b.p[t].numel());
}

// torch::optim::AdamW over `params` (grads already attached), with weight decay 0.01 on matrices and 0 on
// vectors, as HF Trainer groups them.
std::unique_ptr<torch::optim::AdamW> torch_adamw(const std::vector<at::Tensor>& params, double lr) {
  std::vector<at::Tensor> decay, no_decay;
  for (const at::Tensor& p : params) (p.dim() > 1 ? decay : no_decay).push_back(p);
  torch::optim::AdamWOptions decay_options(lr), no_decay_options(lr);
  decay_options.weight_decay(0.01);
  no_decay_options.weight_decay(0.0);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(decay_options));
  if (!no_decay.empty())
    groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(no_decay_options));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), decay_options);
}

// What torch.optim.AdamW(fused=True) runs on the CPU: ATen's _fused_adamw_ over a group's tensors (the
// Python optimizer adds 1 to the step tensors before it; a fixed step times the same kernel).
struct TorchFused {
  std::vector<at::Tensor> p, g, m, v, steps;
  double weight_decay = 0.01;
  void step(double lr) {
    at::_fused_adamw_(p, g, m, v, {}, steps, lr, 0.9, 0.999, weight_decay, 1e-8, false, false);
  }
};

TorchFused torch_fused(const Buffers& b, bool matrices, double weight_decay) {
  TorchFused f;
  f.weight_decay = weight_decay;
  for (std::size_t i = 0; i < b.p.size(); ++i) {
    if ((b.p[i].dim() > 1) != matrices && b.p.size() > 1) continue;
    f.p.push_back(b.p[i]);
    f.g.push_back(b.g[i]);
    f.m.push_back(torch::zeros_like(b.p[i]));
    f.v.push_back(torch::zeros_like(b.p[i]));
    f.steps.push_back(torch::ones({}));
  }
  return f;
}

// Prints the layout's table and returns its JSON fields.
std::string report(const std::string& layout, const std::vector<Variant>& variants, double bytes) {
  const double bound_ms = median(variants.at(0).ms);
  double torch_ms = 0;
  for (const Variant& v : variants)
    if (v.key == "torch") torch_ms = median(v.ms);
  std::printf("\n%s\n%-36s %9s %9s %9s %10s %9s\n", layout.c_str(), "", "ms/step", "min ms", "GB/s",
              "% of bound", "vs torch");
  std::string json;
  for (const Variant& v : variants) {
    const double ms = median(v.ms);
    const double min_ms = *std::min_element(v.ms.begin(), v.ms.end());
    std::printf("%-36s %9.1f %9.1f %9.1f %9.1f%% %8.2fx\n", v.label.c_str(), ms, min_ms, bytes / ms / 1e6,
                100.0 * bound_ms / ms, torch_ms / ms);
    char field[256];
    std::snprintf(field, sizeof field, ", \"%s_%s_ms\": %.2f, \"%s_%s_pct_bound\": %.1f", layout.c_str(),
                  v.key.c_str(), ms, layout.c_str(), v.key.c_str(), 100.0 * bound_ms / ms);
    json += field;
  }
  return json;
}

}  // namespace

int main(int argc, char** argv) {
  // All cores by default: libtorch's own default here is 1 intra-op thread.
  const int threads =
      arg_int(argc, argv, "--threads", static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  const int reps = arg_int(argc, argv, "--reps", 11);
  at::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  const std::vector<std::vector<int64_t>> shapes = bert_base_shapes();
  int64_t numel = 0;
  for (const auto& s : shapes) numel += c10::multiply_integers(s);
  const double bytes = 28.0 * static_cast<double>(numel);
  const std::vector<std::string> isas = berth::optim::adamw_kernel_available_isas();
  const double lr = 5e-5;
  const berth::optim::AdamWStepScalars decay_scalars =
      berth::optim::adamw_scalars(lr, 0.9, 0.999, 1e-8, 0.01, 1);
  const std::string load_before = load_average();

  std::printf(
      "AdamW step over BERT-base's parameters: %lld floats, as 1 flat buffer and as %zu tensors; %d "
      "threads;\n"
      "median of %d interleaved rounds; dispatched ISA %s; load average before: %s\n",
      static_cast<long long>(numel), shapes.size(), at::get_num_threads(), reps,
      berth::optim::adamw_kernel_isa().c_str(), load_before.c_str());
  std::printf("bound: a STREAM-like loop reading p, g, m, v and writing p, m, v (28 B/param, %.2f GB/step)\n",
              bytes / 1e9);

  std::string json = "{\"bench\": \"adamw\", \"numel\": " + std::to_string(numel) +
                     ", \"tensors\": " + std::to_string(shapes.size()) +
                     ", \"threads\": " + std::to_string(at::get_num_threads()) +
                     ", \"reps\": " + std::to_string(reps);
  {  // one flat buffer (what ZeRO shards and offload step)
    Buffers b = make_buffers({{numel}});
    float* p = b.p[0].data_ptr<float>();
    const float* g = b.g[0].data_ptr<float>();
    float* m = b.m[0].data_ptr<float>();
    float* v = b.v[0].data_ptr<float>();
    std::vector<Variant> variants;
    variants.push_back({"bound", "STREAM-like bound", [&] { stream_loop(p, g, m, v, numel); }, {}});
    for (const std::string& isa : isas)
      variants.push_back(
          {isa,
           "berth adamw_step_flat (" + isa + ")",
           [&, isa] { berth::optim::adamw_step_flat_isa(isa, p, g, m, v, numel, decay_scalars); },
           {}});
    TorchFused fused = torch_fused(b, true, 0.01);
    variants.push_back({"torch_fused", "torch _fused_adamw_ (fused=True)", [&] { fused.step(lr); }, {}});
    b.p[0].mutable_grad() = b.g[0];
    std::unique_ptr<torch::optim::AdamW> theirs = torch_adamw({b.p[0]}, lr);
    variants.push_back({"torch", "torch::optim::AdamW", [&] { theirs->step(); }, {}});
    time_rounds(variants, reps);
    json += report("flat", variants, bytes);
  }
  {  // BERT-base's 201 tensors, separately allocated (what the replicated optimizer steps)
    Buffers b = make_buffers(shapes);
    std::vector<Variant> variants;
    variants.push_back({"bound",
                        "STREAM-like bound",
                        [&] {
                          each_tensor(b, [](float* p, const float* g, float* m, float* v, int64_t n) {
                            stream_loop(p, g, m, v, n);
                          });
                        },
                        {}});
    for (const std::string& isa : isas)
      variants.push_back({isa,
                          "berth adamw_step_flat (" + isa + ")",
                          [&, isa] {
                            each_tensor(b, [&](float* p, const float* g, float* m, float* v, int64_t n) {
                              berth::optim::adamw_step_flat_isa(isa, p, g, m, v, n, decay_scalars);
                            });
                          },
                          {}});
    berth::optim::NamedParamGroup decay{{}, {}, 0.01};
    berth::optim::NamedParamGroup no_decay{{}, {}, 0.0};
    for (std::size_t i = 0; i < b.p.size(); ++i) {
      b.p[i].mutable_grad() = b.g[i];
      auto& group = b.p[i].dim() > 1 ? decay : no_decay;
      group.names.push_back("p" + std::to_string(i));
      group.params.push_back(b.p[i]);
    }
    berth::optim::AdamWOptions options;
    options.lr = lr;
    berth::optim::AdamW ours({decay, no_decay}, options);
    variants.push_back({"berth_adamw", "berth::optim::AdamW (dispatched)", [&] { ours.step(); }, {}});
    TorchFused fused_decay = torch_fused(b, true, 0.01), fused_no_decay = torch_fused(b, false, 0.0);
    variants.push_back({"torch_fused",
                        "torch _fused_adamw_ (fused=True)",
                        [&] {
                          fused_decay.step(lr);
                          fused_no_decay.step(lr);
                        },
                        {}});
    std::unique_ptr<torch::optim::AdamW> theirs = torch_adamw(b.p, lr);
    variants.push_back({"torch", "torch::optim::AdamW", [&] { theirs->step(); }, {}});
    time_rounds(variants, reps);
    json += report("tensors", variants, bytes);
    if (ours.fallback_updates() != 0) std::printf("warning: berth's fused path was not taken everywhere\n");
  }
  const std::string load_after = load_average();
  std::printf("\nload average after: %s\n", load_after.c_str());
  json += ", \"load_before\": \"" + load_before + "\", \"load_after\": \"" + load_after + "\"}";
  std::printf("%s\n", json.c_str());
  return 0;
}
