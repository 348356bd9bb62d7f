// Optimizer state tensors (Adam moments, momentum buffers...) against their parameters' devices.
#pragma once

#include "berth/placement/place.h"

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace berth {

// One state tensor of one parameter.
struct OptimizerStateTensor {
  std::string param_name;  // "fc1.weight" with a module, else "param_groups[0].params[3]"
  c10::Device param_device{c10::kCPU};
  std::string state_name;  // "exp_avg", "momentum_buffer", "old_dirs[2]"
  c10::Device state_device{c10::kCPU};
  int64_t bytes = 0;

  bool misplaced() const { return state_device != param_device; }
};

struct OptimizerStateInspection {
  std::vector<OptimizerStateTensor> tensors;  // param_groups order, then each state's field order
  int64_t params = 0;                         // parameters in all param groups
  int64_t params_with_state = 0;
  // "param_groups[0].params[1]: unknown state type MyState": state berth cannot look into.
  // Known: Adam, AdamW, SGD, Adagrad, RMSprop and LBFGS states of torch::optim.
  std::vector<std::string> unknown_states;

  std::vector<OptimizerStateTensor> misplaced() const;
};

// `module`, when given, supplies the parameters' dotted names for messages; parameters it does
// not own fall back to "param_groups[g].params[i]".
OptimizerStateInspection inspect_optimizer_state(const torch::optim::Optimizer& optimizer,
                                                 const torch::nn::Module* module = nullptr);

// Throws PlacementError naming each parameter whose state lives on another device than the
// parameter (the classic after-resume bug), with both devices and the fix.
void check_optimizer_state(const torch::optim::Optimizer& optimizer,
                           const torch::nn::Module* module = nullptr);

// The same check over state tensors gathered elsewhere (a Python optimizer's state, by the Python front end),
// with `fix` as the message's Fix.
void check_optimizer_state_tensors(const std::vector<OptimizerStateTensor>& tensors, std::string_view fix);

struct OptimizerStatePlacementReport {
  int64_t state_tensors = 0;  // state tensors seen
  int64_t moved_tensors = 0;
  int64_t moved_bytes = 0;
  std::vector<DeviceGroup> moved_from;  // moved state tensors by the device they left (names: param.state)
  std::vector<std::string> unknown_states;  // as OptimizerStateInspection::unknown_states; left alone

  // "optimizer state: moved 4 tensors (1.0 KiB) to follow their parameters: 4 from cpu" or
  // "optimizer state: all 4 tensors already on their parameters' devices"; unknown state types
  // are appended as "; 1 state of unknown type left alone".
  std::string summary() const;
};

// Move: every state tensor is moved to its parameter's device (state on meta cannot move to a
// real device: PlacementError, nothing moved). Strict: check_optimizer_state(), nothing moved.
OptimizerStatePlacementReport place_optimizer_state(torch::optim::Optimizer& optimizer,
                                                    PlacementPolicy policy = PlacementPolicy::Move,
                                                    const torch::nn::Module* module = nullptr);

}  // namespace berth
