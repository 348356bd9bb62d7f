// LocalGradientSync: one process, so nothing to synchronise: gradients stay as backward left them, a full
// AdamW replica steps on them, parameters stay whole.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "berth/dist/gradient_sync.h"
#include "berth/dist/replica_optimizer.h"

namespace berth::dist {

class LocalGradientSync final : public GradientSync, public GradientReducer, public ParameterResidency {
 public:
  LocalGradientSync();
  ~LocalGradientSync() override;

  Communicator& communicator() override { return *comm_; }
  GradientReducer& reducer() override { return *this; }
  ShardedOptimizer& optimizer() override { return optimizer_; }
  ParameterResidency& residency() override { return *this; }
  std::string strategy() const override { return "local"; }

  // The replica's AdamW (nullptr before optimizer().create()).
  optim::AdamW* replica_optimizer() const { return optimizer_.adamw(); }

  void prepare(torch::nn::Module&) override {}
  void begin_backward(bool) override {}
  void finish_gradients(const std::vector<at::Tensor>& params) override;
  int64_t gradient_bytes() const override { return gradient_bytes_; }
  void gather() override {}
  void release() override {}
  int64_t parameter_bytes(torch::nn::Module& model) const override;

 private:
  std::shared_ptr<Communicator> comm_;
  ReplicaOptimizer optimizer_;
  int64_t gradient_bytes_ = 0;
};

// The parameter bytes of a model whose parameters are whole on this rank.
int64_t whole_parameter_bytes(torch::nn::Module& model);

}  // namespace berth::dist
