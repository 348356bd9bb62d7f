// The training-step and inference benchmark of `berth benchmark`: a preset BERT classifier on synthetic
// tokens, timed step by step on the CPU or a CUDA device, as one JSON line.
#pragma once

#include <cstdint>
#include <string>

namespace berth::train {

struct StepBenchmarkOptions {
  std::string preset = "bert-mini";  // bert-tiny, bert-mini, bert-small or bert-base
  int64_t batch_size = 8;
  int64_t seq_len = 128;
  int steps = 10;   // timed steps: the medians are over these
  int warmup = 2;   // untimed steps first
  int threads = 0;  // intra-op and BLAS threads; 0: berth's default
  int64_t vocab_size = 30522;
  uint64_t seed = 0;           // of the weights and the synthetic tokens
  int64_t bucket_cap_mb = 25;  // under a launcher: DDP's gradient bucket size
  bool inference = false;      // forward passes only, as `berth eval` runs them
  bool bf16 = false;           // the forward (and loss) under bf16 autocast, as berth train --bf16
  std::string device = "cpu";  // cpu, cuda or cuda:N
};

// Runs the steps (under a launcher: every rank its own tokens, DDP between them) and returns the JSON line
// rank 0 prints (empty on the other ranks): sizes, samples/s over all ranks, median and fastest step, forward
// / backward / optimizer medians, matmul TFLOP per step and the achieved GFLOP/s, and DDP's communication.
// Throws berth::Error for bad options, with the fix.
std::string run_step_benchmark(const StepBenchmarkOptions& options);

}  // namespace berth::train
