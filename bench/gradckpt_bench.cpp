// Activation checkpointing's memory saved and time paid: a MiniLM-sized BERT classifier (6 layers, hidden
// 384, 12 heads, batch 8 x 256 tokens) trained step by step with and without it, in alternating rounds.
// Memory is torch's CPU allocator as its memory profiler sees it: the bytes held from the end of the forward
// into backward (what autograd saved, plus the logits), and the step's peak above its start.
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "berth/model/activation_checkpoint.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/bert_presets.h"

namespace {

// Receives every CPU allocation and free while installed (c10's ProfiledCPUMemoryReporter reports them with
// the running total): the total now and its peak since reset().
struct AllocationMeter : c10::MemoryReportingInfoBase {
  void reportMemoryUsage(void*, int64_t, size_t total_allocated, size_t, c10::Device device) override {
    if (device.type() != c10::DeviceType::CPU) return;
    current = static_cast<int64_t>(total_allocated);
    peak = std::max(peak, current);
  }
  bool memoryProfilingEnabled() const override { return true; }
  void reset() { peak = current; }

  int64_t current = 0;
  int64_t peak = 0;
};

struct StepResult {
  double seconds = 0;
  int64_t held_after_forward = 0;  // bytes
  int64_t peak_above_start = 0;    // bytes
};

int arg_int(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return std::atoi(argv[i + 1]);
  return fallback;
}

// One forward and backward of `model` on the batch; gradients set to none after it, as the Trainer does.
StepResult measure_step(berth::BertForSequenceClassificationImpl& model, AllocationMeter& meter,
                        const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& labels) {
  StepResult result;
  meter.reset();
  const int64_t start = meter.current;
  const auto t0 = std::chrono::steady_clock::now();
  at::Tensor loss = model.forward(ids, mask, {}, labels).loss;
  result.held_after_forward = meter.current - start;
  loss.backward();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.peak_above_start = meter.peak - start;
  loss = at::Tensor();
  for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
  return result;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = arg_int(argc, argv, "--rounds", 3);
  const int steps = arg_int(argc, argv, "--steps", 2);
  const int64_t batch = arg_int(argc, argv, "--batch", 8), seq = arg_int(argc, argv, "--seq", 256);
  berth::BertConfig config = berth::bert_preset("bert-small");
  config.num_hidden_layers = arg_int(argc, argv, "--layers", 6);
  config.hidden_size = 384;
  config.num_attention_heads = 12;
  config.intermediate_size = 1536;
  config.max_position_embeddings = 512;
  berth::BertForSequenceClassification model(config);
  model->train();
  torch::manual_seed(1);
  const at::Tensor ids = torch::randint(5, config.vocab_size, {batch, seq});
  const at::Tensor mask = torch::ones({batch, seq}, at::kLong);
  const at::Tensor labels = torch::randint(0, 2, {batch});

  auto meter = std::make_shared<AllocationMeter>();
  c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, meter);
  std::vector<double> time[2], held[2], peak[2];
  for (int round = 0; round < rounds; ++round) {
    for (int on = 0; on < 2; ++on) {
      model->set_gradient_checkpointing({on == 1, 1});
      measure_step(*model, *meter, ids, mask, labels);  // warm-up
      for (int s = 0; s < steps; ++s) {
        const StepResult r = measure_step(*model, *meter, ids, mask, labels);
        time[on].push_back(r.seconds);
        held[on].push_back(r.held_after_forward / 1048576.0);
        peak[on].push_back(r.peak_above_start / 1048576.0);
      }
    }
  }
  std::printf(
      "BERT %lld layers, hidden %lld, batch %lld x %lld tokens, %d threads, %d rounds x %d steps (median)\n",
      static_cast<long long>(config.num_hidden_layers), static_cast<long long>(config.hidden_size),
      static_cast<long long>(batch), static_cast<long long>(seq), at::get_num_threads(), rounds, steps);
  std::printf("%-28s %12s %12s\n", "", "plain", "checkpointed");
  std::printf("%-28s %12.1f %12.1f  (%+.0f%%)\n", "held after forward (MiB)", median(held[0]),
              median(held[1]), 100.0 * (median(held[1]) / median(held[0]) - 1));
  std::printf("%-28s %12.1f %12.1f  (%+.0f%%)\n", "step peak above start (MiB)", median(peak[0]),
              median(peak[1]), 100.0 * (median(peak[1]) / median(peak[0]) - 1));
  std::printf("%-28s %12.3f %12.3f  (%+.0f%%)\n", "forward+backward (s)", median(time[0]), median(time[1]),
              100.0 * (median(time[1]) / median(time[0]) - 1));
  return 0;
}
