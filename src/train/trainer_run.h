// Trainer::Run: what one train() call's set-up (trainer.cpp) hands its step loop (trainer_step_loop.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "berth/data/data_loader.h"
#include "berth/train/rng_state.h"
#include "berth/train/trainer.h"
#include "train/trainer_internal.h"

namespace berth::train {

// What one train() call's steps share: HF's step arithmetic, the loader, and the running sums.
struct Trainer::Run {
  const Trial* trial = nullptr;
  std::optional<std::string> resume;
  std::unique_ptr<data::DataLoader> loader;
  int64_t accumulation = 1;
  int64_t batches_per_epoch = 0;
  int64_t steps_per_epoch = 0;
  int64_t max_steps = 0;
  int64_t num_epochs = 0;
  int64_t flops_per_token = 0;
  int64_t num_params = 0;          // trainable, counted before ZeRO-3 partitions them
  std::vector<at::Tensor> params;  // trainable
  std::optional<RngState> resumed_rng;
  int64_t epochs_trained = 0;
  int64_t batches_to_skip = 0;
  detail::Clock::time_point start;
  int64_t start_step = 0;
  double total_loss = 0;  // sum over optimizer steps of the mean micro-batch loss, for train_loss
  double step_loss = 0;
  double loss_since_log = 0;
  int64_t last_logged_step = 0;
  double grad_norm = 0;
  int64_t samples_seen = 0;
  bool step_loss_finite = true;  // every micro-batch loss of the current step was finite
  int64_t nonfinite_streak = 0;  // optimizer steps in a row with non-finite gradients
  int64_t nonfinite_first = 0;   // the first step of that streak
};

}  // namespace berth::train
