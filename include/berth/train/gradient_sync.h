// GradientSync: how gradients meet across processes, hidden from the Trainer (flashlight's Reducer idea).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "berth/dist/communicator.h"

namespace torch::nn {
class Module;
}

namespace berth::train {

// The Trainer calls these at fixed points of its loop and never asks which strategy is behind them: one
// process (LocalGradientSync), DDP all-reduce, or ZeRO's sharded variants.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;
  // Once, after the model is placed and before the first step (DDP: broadcast rank 0's parameters and check
  // that every rank holds the same structure).
  virtual void prepare(torch::nn::Module& model) = 0;
  // Before each micro-step's backward: whether this backward ends an accumulation (only then do gradients
  // need to travel; the others run as DDP's no_sync).
  virtual void begin_backward(bool last_micro_step) = 0;
  // After the last micro-step's backward, before clipping: every rank's gradients become the world's mean.
  virtual void finish_gradients(const std::vector<at::Tensor>& params) = 0;
  // Sums a value over ranks (eval loss and metric counts).
  virtual double all_reduce_sum(double value) = 0;
  // The ranks' channel for everything that is not a gradient: barriers around saves, the logged loss, the
  // evaluation's rows, agreement checks. One process: a local communicator (every collective is the
  // identity).
  virtual dist::Communicator& communicator();
  // The strategy's name ("local", "ddp", "zero-1", ...): ranks check that they agree on it before step 1.
  virtual std::string strategy() const { return "local"; }
};

// One process: nothing to synchronise.
class LocalGradientSync final : public GradientSync {
 public:
  int64_t rank() const override { return 0; }
  int64_t world_size() const override { return 1; }
  void prepare(torch::nn::Module&) override {}
  void begin_backward(bool) override {}
  void finish_gradients(const std::vector<at::Tensor>&) override {}
  double all_reduce_sum(double value) override { return value; }
};

}  // namespace berth::train
