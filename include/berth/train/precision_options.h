// Precision options: fp32, fp16 with DeepSpeed's dynamic loss scaling, or bf16 (HF's fp16/bf16, DeepSpeed's
// fp16/bf16 blocks).
#pragma once

#include <cstdint>
#include <string>

namespace berth::train {

enum class Precision { fp32, fp16, bf16 };

std::string to_string(Precision precision);

// DeepSpeed's fp16 block (deepspeed/runtime/fp16/loss_scaler.py semantics).
struct LossScaleOptions {
  double loss_scale = 0;                // 0: dynamic; > 0: this static scale
  int initial_scale_power = 16;         // dynamic: the first scale is 2^power
  int64_t loss_scale_window = 1000;     // dynamic: steps without overflow before the scale doubles
  int hysteresis = 2;                   // dynamic: overflows tolerated before the scale halves
  bool consecutive_hysteresis = false;  // true: hysteresis is restored after every good step
  double min_loss_scale = 1;  // dynamic: the scale never goes below; an overflow there stops the run
};

struct PrecisionOptions {
  Precision precision = Precision::fp32;
  LossScaleOptions loss_scale;  // fp16 only
};

}  // namespace berth::train
