// ZeRO stage 3's partitioned parameters: PartitionedParameters, which partitions a model's parameters into
// per-block flat buffers (zero3_blocks.cpp) and hooks the model to gather and release them
// (zero3_gather.cpp, zero3_trace.cpp, zero3_autograd.cpp).
#include "berth/dist/zero3_parameters.h"

#include "berth/core/error.h"
#include "berth/model/layer_hooks.h"
#include "zero3_state.h"

#include <torch/torch.h>

#include <memory>
#include <mutex>

namespace berth::dist {

using zero3::Param;
using zero3::Zero3State;

struct PartitionedParameters::Impl {
  std::shared_ptr<Zero3State> state = std::make_shared<Zero3State>();
  int64_t id = 0;
  // Owned, so that a sync destroyed after the code that built the model (a ProcessContext outliving its
  // Trainer) can still unhook it.
  std::shared_ptr<LayeredModel> model;
  std::vector<ParamSegment> segments;
  std::vector<at::Tensor> owned;  // per segment
};

PartitionedParameters::PartitionedParameters(std::shared_ptr<Communicator> comm, ZeroOptions options)
    : impl_(std::make_unique<Impl>()) {
  BERTH_BUG(comm != nullptr, "PartitionedParameters needs a communicator");
  impl_->state->comm = std::move(comm);
  impl_->state->options = std::move(options);
  impl_->id = zero3::register_state(impl_->state);
}

PartitionedParameters::~PartitionedParameters() {
  {
    std::lock_guard<std::recursive_mutex> lock(impl_->state->mutex);
    // No collectives here (other ranks may not be destroying theirs): a model still partitioned fails with
    // a clear error in its next forward.
    impl_->state->attached = false;
  }
  zero3::unregister_state(impl_->id);
}

void PartitionedParameters::partition(torch::nn::Module& model, const FlatLayout& layout) {
  Zero3State& state = *impl_->state;
  std::lock_guard<std::recursive_mutex> lock(state.mutex);
  BERTH_CHECK(!state.attached,
              "ZeRO stage 3: partition() called twice. Fix: unpartition() first, then partition again");
  BERTH_CHECK(state.options.stage == 3, "PartitionedParameters is ZeRO stage 3's; the options say stage ",
              state.options.stage,
              ". Fix: set zero_optimization.stage to 3, or use stage 1 or 2's gradient sync");
  state.held_whole = false;
  auto* layered = dynamic_cast<LayeredModel*>(&model);
  BERTH_CHECK(
      layered != nullptr, "ZeRO stage 3 gathers each block's parameters through layer hooks, which ",
      "berth's task models (berth::TaskModel, e.g. BertForSequenceClassification) run; this model is a ",
      model.name(),
      ", which has none. Fix: use ZeRO stage 2 (or 1) for this model, or implement berth::LayeredModel "
      "for it (see berth/model/layer_hooks.h)");

  state.reset_blocks(layered->hook_blocks());
  impl_->segments = per_parameter_partition(layout, state.comm->rank(), state.comm->world_size(),
                                            state.options.stage3_param_persistence_threshold);
  state.add_params(model, layout, impl_->segments);
  state.release_new_blocks();

  impl_->owned.clear();
  for (const ParamSegment& segment : impl_->segments) {
    const Param& param = state.params[segment.param];
    impl_->owned.push_back(param.persistent ? param.param.detach().view({-1}) : param.piece);
  }
  state.attached = true;
  try {
    impl_->model = std::dynamic_pointer_cast<LayeredModel>(model.shared_from_this());
  } catch (const std::bad_weak_ptr&) {  // a module not held by a shared_ptr: its owner keeps it alive
    impl_->model = std::shared_ptr<LayeredModel>(layered, [](auto*) {});
  }
  layered->set_layer_hooks(zero3::make_layer_hooks(impl_->state, impl_->id));
}

void PartitionedParameters::unpartition() {
  Zero3State& state = *impl_->state;
  std::lock_guard<std::recursive_mutex> lock(state.mutex);
  if (!state.attached) return;
  gather_all();
  // The parameters keep their gathered data (views of the blocks' buffers, which stay allocated).
  impl_->model->set_layer_hooks(nullptr);
  impl_->model = nullptr;
  state.attached = false;
  state.params.clear();
  state.blocks.clear();
  state.block_names.clear();
  state.block_index.clear();
  state.full_bytes = 0;
  impl_->owned.clear();
  impl_->segments.clear();
}

void PartitionedParameters::gather_all() {
  Zero3State& state = *impl_->state;
  std::lock_guard<std::recursive_mutex> lock(state.mutex);
  state.check_attached();
  for (size_t i = 0; i < state.blocks.size(); ++i) state.start_gather(static_cast<int>(i), false);
  for (size_t i = 0; i < state.blocks.size(); ++i) state.finish_gather(static_cast<int>(i));
  state.held_whole = true;
}

void PartitionedParameters::release_all() {
  Zero3State& state = *impl_->state;
  std::lock_guard<std::recursive_mutex> lock(state.mutex);
  state.check_attached();
  state.held_whole = false;
  state.release_all();
}

const std::vector<ParamSegment>& PartitionedParameters::owned_segments() const { return impl_->segments; }

at::Tensor PartitionedParameters::owned_piece(size_t i) const {
  BERTH_BUG(i < impl_->owned.size(), "owned_piece(", i, ") of ", impl_->owned.size(), " segments");
  return impl_->owned[i];
}

void PartitionedParameters::after_step() {
  Zero3State& state = *impl_->state;
  std::lock_guard<std::recursive_mutex> lock(state.mutex);
  state.check_attached();
  if (state.comm->world_size() == 1) return;
  std::vector<at::Tensor> persistent;
  for (Param& param : state.params)
    if (param.persistent) persistent.push_back(param.param.detach());
  if (persistent.empty()) return;
  torch::NoGradGuard no_grad;
  state.comm->broadcast(persistent, 0, "ZeRO-3 broadcast of the persistent parameters after the step");
}

int64_t PartitionedParameters::held_parameter_bytes() const {
  const Zero3State& state = *impl_->state;
  int64_t bytes = 0;
  for (const Param& param : state.params)
    bytes += param.persistent ? param.param.numel() * param.param.element_size()
                              : param.piece.numel() * param.piece.element_size();
  return bytes;
}

Zero3Stats PartitionedParameters::stats() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->state->mutex);
  return impl_->state->stats;
}

}  // namespace berth::dist
