// GradientSync: a parallel strategy as the Trainer sees it: the ranks' channel, a gradient reducer, an
// optimizer that may own a shard, and where parameters live between steps (flashlight's Reducer idea,
// DeepSpeed's engine, cut into parts of one job each).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "berth/dist/communicator.h"
#include "berth/dist/gradient_reducer.h"
#include "berth/dist/parameter_residency.h"
#include "berth/dist/sharded_optimizer.h"

namespace torch::nn {
class Module;
}

namespace berth::dist {

// Bytes this rank holds for training state, by kind (the ZeRO paper's accounting), for the memory report.
struct MemoryFootprint {
  int64_t parameters = 0;        // the model's parameters as this rank holds them between steps
  int64_t gradients = 0;         // gradient storage at the step's peak (param.grad() and sync buffers)
  int64_t optimizer_states = 0;  // Adam's moments plus any fp32 master copy
  int64_t total() const { return parameters + gradients + optimizer_states; }
};

// The Trainer holds one and never asks which strategy is behind it: one process, DDP, or ZeRO 1-3.
class GradientSync {
 public:
  virtual ~GradientSync();
  // The ranks' channel for everything that is not a gradient: barriers around saves, the logged loss, the
  // evaluation's rows, agreement checks. One process: a local communicator (every collective is identity).
  virtual Communicator& communicator() = 0;
  virtual GradientReducer& reducer() = 0;
  virtual ShardedOptimizer& optimizer() = 0;
  virtual ParameterResidency& residency() = 0;
  // The strategy's name ("local", "ddp", "zero-1", ...): ranks check that they agree on it before step 1.
  virtual std::string strategy() const = 0;

  int64_t rank() { return communicator().rank(); }
  int64_t world_size() { return communicator().world_size(); }
  // What this rank holds (call after a step): the three parts' accounts.
  MemoryFootprint memory_footprint(torch::nn::Module& model);
};

// One process: nothing to synchronise, a full replica of berth's AdamW, whole parameters.
std::shared_ptr<GradientSync> make_local_gradient_sync();

}  // namespace berth::dist
