// checkpoint(): a block's forward without saved activations, recomputed in backward (torch.utils.checkpoint's
// reentrant variant, with its preserve_rng_state and autocast handling).
#include "berth/model/activation_checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <utility>

namespace berth {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::atomic<int64_t> recomputations{0};

// Autocast's thread-local switches for the devices berth trains on.
struct AutocastState {
  bool cpu = false;
  bool cuda = false;
  c10::ScalarType cpu_dtype = at::kBFloat16;
  c10::ScalarType cuda_dtype = at::kHalf;

  static AutocastState current() {
    return {at::autocast::is_autocast_enabled(at::kCPU), at::autocast::is_autocast_enabled(at::kCUDA),
            at::autocast::get_autocast_dtype(at::kCPU), at::autocast::get_autocast_dtype(at::kCUDA)};
  }
  void apply() const {
    at::autocast::set_autocast_enabled(at::kCPU, cpu);
    at::autocast::set_autocast_enabled(at::kCUDA, cuda);
    at::autocast::set_autocast_dtype(at::kCPU, cpu_dtype);
    at::autocast::set_autocast_dtype(at::kCUDA, cuda_dtype);
  }
};

// Sets an autocast state for a scope: the recomputation runs as the forward did, whatever backward runs
// under (the Trainer's autocast guard has ended by then). An enabled one is a region as torch.autocast's:
// the outermost drops the casted copies of the weights on leaving, so none outlives an optimizer step.
class AutocastScope {
 public:
  explicit AutocastScope(const AutocastState& state)
      : saved_(AutocastState::current()), region_(state.cpu || state.cuda) {
    state.apply();
    if (region_) at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (region_ && at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    saved_.apply();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  AutocastState saved_;
  bool region_;
};

// A Generator is a handle: copies share the generator and its mutex.
at::Tensor generator_state(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(at::Generator generator, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

// The generators dropout draws from: torch's default CPU one (berth's dropout kernel seeds from it too)
// and, for a block on a CUDA device, that device's default one.
struct RngState {
  at::Tensor cpu;
  at::Tensor cuda;
  std::optional<c10::Device> cuda_device;

  static RngState capture(const c10::Device& device) {
    RngState state;
    state.cpu = generator_state(at::detail::getDefaultCPUGenerator());
    if (device.is_cuda()) {
      state.cuda_device = device;
      state.cuda = generator_state(at::globalContext().defaultGenerator(device));
    }
    return state;
  }
  void restore() const {
    set_generator_state(at::detail::getDefaultCPUGenerator(), cpu);
    if (cuda_device) set_generator_state(at::globalContext().defaultGenerator(*cuda_device), cuda);
  }
};

// torch's fork_rng: the forward's generator states for a scope, the current ones again after it, so the
// recomputation redraws the forward's dropout masks and leaves the draws of later code as they were.
class RngFork {
 public:
  explicit RngFork(const RngState& forward_state)
      : current_(RngState::capture(forward_state.cuda_device.value_or(c10::Device(at::kCPU)))) {
    forward_state.restore();
  }
  ~RngFork() { current_.restore(); }
  RngFork(const RngFork&) = delete;
  RngFork& operator=(const RngFork&) = delete;

 private:
  RngState current_;
};

// What the backward needs besides the saved input, held by the autograd node until it runs.
struct CheckpointPayload : torch::CustomClassHolder {
  BlockForward fn;
  std::vector<at::Tensor> params;  // the block's parameters that require grad, as passed to forward
  RngState rng;
  AutocastState autocast;
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  // input: any -> fn(input); params: the block's parameters (inputs, so that their gradients flow out of
  // this node).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::TensorList& params,
                            c10::intrusive_ptr<CheckpointPayload> payload) {
    (void)params;  // payload->params holds them
    payload->rng = RngState::capture(input.device());
    payload->autocast = AutocastState::current();
    at::Tensor output = payload->fn(input);  // autograd is off here: nothing inside is saved
    ctx->save_for_backward({input});
    ctx->saved_data["payload"] = c10::IValue::make_capsule(std::move(payload));
    return output;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto payload =
        c10::static_intrusive_pointer_cast<CheckpointPayload>(ctx->saved_data["payload"].toCapsule());
    const bool input_grad = ctx->needs_input_grad(0);
    const at::Tensor input = ctx->get_saved_variables()[0].detach().requires_grad_(input_grad);
    at::Tensor output;
    {
      const RngFork fork(payload->rng);
      const AutocastScope autocast(payload->autocast);
      const at::AutoGradMode grad_mode(true);
      output = payload->fn(input);
    }
    recomputations.fetch_add(1, std::memory_order_relaxed);
    variable_list wrt;
    if (input_grad) wrt.push_back(input);
    wrt.insert(wrt.end(), payload->params.begin(), payload->params.end());
    variable_list computed(wrt.size());
    if (grads[0].defined() && output.requires_grad())
      computed = torch::autograd::grad({output}, wrt, {grads[0]}, /*retain_graph=*/false,
                                       /*create_graph=*/false, /*allow_unused=*/true);
    // One gradient per forward argument: input, each parameter, the payload.
    variable_list result{input_grad ? computed[0] : at::Tensor()};
    result.insert(result.end(), computed.begin() + (input_grad ? 1 : 0), computed.end());
    result.emplace_back();
    return result;
  }
};

}  // namespace

at::Tensor checkpoint(BlockForward fn, const at::Tensor& input, const std::vector<at::Tensor>& params) {
  auto payload = c10::make_intrusive<CheckpointPayload>();
  payload->fn = std::move(fn);
  for (const at::Tensor& p : params)
    if (p.requires_grad()) payload->params.push_back(p);
  const std::vector<at::Tensor> inputs = payload->params;
  return CheckpointFunction::apply(input, at::TensorList(inputs), std::move(payload));
}

at::Tensor run_layer_block(LayerHooks* hooks, const std::string& block, torch::nn::Module& layer,
                           const at::Tensor& input, const BlockForward& fn, bool checkpointed) {
  const bool on = checkpointed && at::GradMode::is_enabled();
  auto body = [&](const at::Tensor& x) { return on ? checkpoint(fn, x, layer.parameters()) : fn(x); };
  if (hooks == nullptr) return body(input);
  return hooks->after_forward(block, body(hooks->before_forward(block, input)));
}

int64_t checkpoint_recomputations() { return recomputations.load(std::memory_order_relaxed); }

}  // namespace berth
