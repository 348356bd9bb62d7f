// ZeRO stage 3's autograd side: the layer hooks, the wrappers that gather before a block's backward and
// release after it, and the release of whatever is left when backward ends.
#include "berth/core/error.h"
#include "zero3_state.h"

#include <torch/csrc/autograd/engine.h>

#include <unordered_map>

namespace berth::dist::zero3 {
namespace {

std::mutex registry_mutex;
std::unordered_map<int64_t, std::weak_ptr<Zero3State>> registry;
int64_t next_state_id = 1;

std::shared_ptr<Zero3State> find_state(int64_t id) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry.find(id);
  return it == registry.end() ? nullptr : it->second.lock();
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Identity forward on a use's output; backward gathers the block's parameters (that use's backward comes
// next) and prefetches the uses traced before it.
struct GatherBeforeBackward : torch::autograd::Function<GatherBeforeBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t state_id, int64_t block,
                            int64_t position) {
    ctx->saved_data["core"] = state_id;
    ctx->saved_data["block"] = block;
    ctx->saved_data["position"] = position;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (auto state = find_state(ctx->saved_data["core"].toInt())) {
      std::lock_guard<std::recursive_mutex> lock(state->mutex);
      if (state->attached) {
        const int block = static_cast<int>(ctx->saved_data["block"].toInt());
        state->trace_complete = true;
        state->queue_final_release(state);
        state->blocks[block].live += 1;
        state->finish_gather(block);
        state->prefetch(static_cast<int>(ctx->saved_data["position"].toInt()), /*forward=*/false);
      }
    }
    return {grads[0], at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Identity forward on a use's input; its backward runs once the gradient w.r.t. that input is complete, i.e.
// the use's backward is over: the block's parameters are released unless another use is live. A tied
// parameter's gradient is not summed yet then (autograd accumulates it once, after its last use's backward,
// with the block gathered again for that use), so it reaches the gradient hooks whole.
struct ReleaseAfterBackward : torch::autograd::Function<ReleaseAfterBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t state_id, int64_t block) {
    ctx->saved_data["core"] = state_id;
    ctx->saved_data["block"] = block;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (auto state = find_state(ctx->saved_data["core"].toInt())) {
      std::lock_guard<std::recursive_mutex> lock(state->mutex);
      if (state->attached) state->end_live_use(static_cast<int>(ctx->saved_data["block"].toInt()));
    }
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

class Zero3Hooks : public LayerHooks {
 public:
  Zero3Hooks(std::shared_ptr<Zero3State> state, int64_t id) : state_(std::move(state)), id_(id) {}

  // A use of block `name` begins: gathered (or already, by a prefetch or a live use), the next uses
  // prefetched.
  at::Tensor before_forward(const std::string& name, const at::Tensor& input) override {
    std::lock_guard<std::recursive_mutex> lock(state_->mutex);
    state_->check_attached();
    const int block = state_->index_of(name);
    const int position = state_->begin_use(block);
    state_->finish_gather(block);
    state_->blocks[block].live += 1;
    state_->open.push_back({block, position});
    state_->prefetch(position, /*forward=*/true);
    if (at::GradMode::is_enabled() && input.requires_grad())
      return ReleaseAfterBackward::apply(input, id_, static_cast<int64_t>(block));
    return input;
  }

  // The use ends: released unless another use of the block is live (a use nested in it).
  at::Tensor after_forward(const std::string& name, const at::Tensor& output) override {
    std::lock_guard<std::recursive_mutex> lock(state_->mutex);
    state_->check_attached();
    const int block = state_->index_of(name);
    const int position = state_->end_use(block);
    at::Tensor result = output;
    if (at::GradMode::is_enabled() && output.requires_grad())
      result = GatherBeforeBackward::apply(output, id_, static_cast<int64_t>(block), position);
    state_->end_live_use(block);
    // Without autograd nothing comes back for prefetched blocks the forward skipped.
    if (!at::GradMode::is_enabled() && state_->trace_complete && state_->open.empty() &&
        state_->cursor == state_->trace.size())
      state_->release_all();
    return result;
  }

 private:
  std::shared_ptr<Zero3State> state_;
  int64_t id_;
};

}  // namespace

// Releases whatever is still gathered when backward ends (the embeddings, whose input needs no gradient,
// and prefetched blocks backward never reached).
void Zero3State::queue_final_release(const std::shared_ptr<Zero3State>& self) {
  if (callback_queued) return;
  callback_queued = true;
  std::weak_ptr<Zero3State> weak = self;
  torch::autograd::Engine::get_default_engine().queue_callback([weak] {
    auto state = weak.lock();
    if (!state) return;
    std::lock_guard<std::recursive_mutex> lock(state->mutex);
    state->callback_queued = false;
    if (!state->attached) return;
    state->release_all();
    state->cursor = state->trace.size();  // the forward is over, even one that failed half-way
  });
}

int64_t register_state(const std::shared_ptr<Zero3State>& state) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  const int64_t id = next_state_id++;
  registry[id] = state;
  return id;
}

void unregister_state(int64_t id) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry.erase(id);
}

std::shared_ptr<LayerHooks> make_layer_hooks(std::shared_ptr<Zero3State> state, int64_t id) {
  return std::make_shared<Zero3Hooks>(std::move(state), id);
}

}  // namespace berth::dist::zero3
