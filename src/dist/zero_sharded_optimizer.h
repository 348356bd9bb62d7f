// ZeroShardedOptimizer: ZeRO's AdamW over the pieces one rank owns: it steps them with berth::optim::AdamW's
// math, shares the updated values with every rank, and saves and loads its shard of the state.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "berth/dist/communicator.h"
#include "berth/dist/gradient_reducer.h"
#include "berth/dist/sharded_optimizer.h"
#include "berth/dist/zero_gradient_sync.h"
#include "berth/dist/zero_options.h"

namespace berth::dist {

struct ZeroShard;

class ZeroShardedOptimizer final : public ShardedOptimizer {
 public:
  // `reducer` finishes each step's gradients into `shard`, whose pieces this optimizer steps. All four
  // outlive it.
  ZeroShardedOptimizer(GradientReducer& reducer, ZeroShard& shard, Communicator& comm,
                       const ZeroOptions& options);
  ~ZeroShardedOptimizer() override;

  // After the reducer's prepare: master weights and moments for every owned piece.
  void create(torch::nn::Module& model, const OptimizerSpec& spec) override;
  StepResult step(const std::vector<at::Tensor>& params, const StepOptions& options) override;
  void save_state(const std::string& checkpoint_dir) override;
  void load_state(const std::string& checkpoint_dir, const std::string& placement,
                  torch::nn::Module& model) override;
  int64_t state_bytes() const override;

  // The state goes (the shard's model is gone); create() makes it again.
  void reset();
  void set_lr(double lr);
  double lr() const { return lr_; }
  int64_t step_count() const { return step_count_; }
  at::Tensor master(size_t i) const { return master_.at(i); }
  at::Tensor exp_avg(size_t i) const { return exp_avg_.at(i); }
  at::Tensor exp_avg_sq(size_t i) const { return exp_avg_sq_.at(i); }
  // The optimizer's counters: steps, gather_collectives and gathered_bytes (the others stay 0).
  const ZeroStats& stats() const { return stats_; }

 private:
  void set_hyperparameters(const optim::AdamWOptions& adam);
  void create_piece_state(const std::map<std::string, double>& decay_by_name);
  double global_grad_norm();
  void clip_gradients(double grad_norm, double max_grad_norm);
  void adamw_update();
  void write_masters_to_parameters();
  void all_gather_parameters();
  void all_gather_chunk(int64_t partition_size, int64_t chunk_begin, int64_t chunk_len);

  GradientReducer& reducer_;
  ZeroShard& shard_;
  Communicator& comm_;
  const ZeroOptions& options_;
  bool ready_ = false;  // create() ran for the current model
  // One entry per owned piece.
  std::vector<at::Tensor> master_, exp_avg_, exp_avg_sq_;
  std::vector<double> weight_decay_;  // < 0: the piece's parameter is in no group (not stepped)
  double lr_ = 0, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8;
  int64_t step_count_ = 0;
  ZeroStats stats_;
};

}  // namespace berth::dist
