// ReplicaOptimizer: berth's AdamW with its whole state on every rank (one process, DDP), behind the
// ShardedOptimizer seam.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "berth/dist/communicator.h"
#include "berth/dist/gradient_reducer.h"
#include "berth/dist/sharded_optimizer.h"

namespace berth::dist {

class ReplicaOptimizer final : public ShardedOptimizer {
 public:
  // `reducer` finishes each step's gradients; `comm` decides who writes checkpoints (rank 0). Both outlive
  // this optimizer.
  ReplicaOptimizer(GradientReducer& reducer, Communicator& comm);
  ~ReplicaOptimizer() override;

  void create(torch::nn::Module& model, const OptimizerSpec& spec) override;
  StepResult step(const std::vector<at::Tensor>& params, const StepOptions& options) override;
  void save_state(const std::string& checkpoint_dir) override;
  void load_state(const std::string& checkpoint_dir, const std::string& placement,
                  torch::nn::Module& model) override;
  int64_t state_bytes() const override;

  // The AdamW (nullptr before create): for tests and tools that inspect state.
  optim::AdamW* adamw() const { return optimizer_.get(); }

 private:
  void load_zero_checkpoint(const std::string& checkpoint_dir);

  GradientReducer& reducer_;
  Communicator& comm_;
  std::unique_ptr<optim::AdamW> optimizer_;
};

// Drops every parameter's gradient (to none).
void drop_gradients(const std::vector<at::Tensor>& params);
// Bytes of a tensor's data; 0 when undefined.
int64_t tensor_bytes(const at::Tensor& t);

}  // namespace berth::dist
