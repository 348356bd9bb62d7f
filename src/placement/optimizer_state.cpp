// Finds the tensors inside torch::optim's per-parameter states and keeps them on their parameters' devices.
#include "berth/placement/optimizer_state.h"

#include "berth/core/compat.h"
#include "berth/core/error.h"
#include "berth/device/device.h"

#include <torch/torch.h>

#include <sstream>
#include <typeinfo>
#include <unordered_map>

namespace berth {
namespace {

struct StateField {
  std::string name;
  at::Tensor* tensor;
};

// The tensors of one parameter's state, or false when berth does not know the state's type.
// OptimizerParamState exposes nothing, so each known optimizer's state is reached by its type.
bool state_fields(torch::optim::OptimizerParamState& state, std::vector<StateField>& out) {
  auto add = [&](std::string name, at::Tensor& tensor) {
    if (tensor.defined()) out.push_back(StateField{std::move(name), &tensor});
  };
  auto add_all = [&](const std::string& name, auto& tensors) {
    std::size_t i = 0;
    for (at::Tensor& tensor : tensors) add(name + "[" + std::to_string(i++) + "]", tensor);
  };
  if (auto* s = dynamic_cast<torch::optim::AdamParamState*>(&state)) {
    add("exp_avg", s->exp_avg());
    add("exp_avg_sq", s->exp_avg_sq());
    add("max_exp_avg_sq", s->max_exp_avg_sq());
  } else if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(&state)) {
    add("exp_avg", s->exp_avg());
    add("exp_avg_sq", s->exp_avg_sq());
    add("max_exp_avg_sq", s->max_exp_avg_sq());
  } else if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(&state)) {
    add("momentum_buffer", s->momentum_buffer());
  } else if (auto* s = dynamic_cast<torch::optim::AdagradParamState*>(&state)) {
    add("sum", s->sum());
  } else if (auto* s = dynamic_cast<torch::optim::RMSpropParamState*>(&state)) {
    add("square_avg", s->square_avg());
    add("momentum_buffer", s->momentum_buffer());
    add("grad_avg", s->grad_avg());
  } else if (auto* s = dynamic_cast<torch::optim::LBFGSParamState*>(&state)) {
    add("d", s->d());
    add("H_diag", s->H_diag());
    add("prev_flat_grad", s->prev_flat_grad());
    add_all("old_dirs", s->old_dirs());
    add_all("old_stps", s->old_stps());
    add_all("ro", s->ro());
    if (s->al()) add_all("al", *s->al());
  } else {
    return false;
  }
  return true;
}

struct Walk {
  OptimizerStateInspection inspection;
  std::vector<at::Tensor*> handles;  // parallel to inspection.tensors
};

// Takes the optimizer as const for inspection too: state_fields() needs mutable access only for
// place_optimizer_state(), and inspection never writes through the handles.
Walk walk(const torch::optim::Optimizer& optimizer, const torch::nn::Module* module) {
  std::unordered_map<const c10::TensorImpl*, std::string> names;
  if (module != nullptr) {
    for (const NamedTensor& named : module_tensors(*module))
      names.emplace(named.tensor.unsafeGetTensorImpl(), named.name);
  }
  auto& states = const_cast<torch::optim::Optimizer&>(optimizer).state();
  Walk result;
  const auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& params = groups[g].params();
    for (std::size_t p = 0; p < params.size(); ++p) {
      const at::Tensor& param = params[p];
      if (!param.defined()) continue;
      ++result.inspection.params;
      const auto it = states.find(compat::optimizer_state_key(param));
      if (it == states.end() || !it->second) continue;
      ++result.inspection.params_with_state;
      const auto name_it = names.find(param.unsafeGetTensorImpl());
      const std::string param_name =
          name_it != names.end() ? name_it->second : detail::concat("param_groups[", g, "].params[", p, "]");
      std::vector<StateField> fields;
      if (!state_fields(*it->second, fields)) {
        const auto& state = *it->second;
        result.inspection.unknown_states.push_back(
            detail::concat(param_name, ": unknown state type ", c10::demangle(typeid(state).name())));
        continue;
      }
      for (StateField& field : fields) {
        OptimizerStateTensor info;
        info.param_name = param_name;
        info.param_device = param.device();
        info.state_name = std::move(field.name);
        info.state_device = field.tensor->device();
        info.bytes = field.tensor->numel() * static_cast<int64_t>(field.tensor->element_size());
        result.inspection.tensors.push_back(std::move(info));
        result.handles.push_back(field.tensor);
      }
    }
  }
  return result;
}

constexpr std::size_t kMaxParamLines = 8;

// One line per parameter with misplaced state: "  fc1.weight on cpu: exp_avg on meta (48 B), ...".
std::string misplaced_lines(const std::vector<OptimizerStateTensor>& misplaced) {
  std::vector<std::string> lines;
  std::string current;
  for (std::size_t i = 0; i < misplaced.size(); ++i) {
    const OptimizerStateTensor& t = misplaced[i];
    const bool new_param = i == 0 || misplaced[i - 1].param_name != t.param_name;
    if (new_param) {
      if (!current.empty()) lines.push_back(current);
      current = detail::concat("\n  ", t.param_name, " on ", device_name(t.param_device), ": ");
    } else {
      current += ", ";
    }
    current +=
        detail::concat(t.state_name, " on ", device_name(t.state_device), " (", format_bytes(t.bytes), ")");
  }
  if (!current.empty()) lines.push_back(current);
  std::string out;
  for (std::size_t i = 0; i < lines.size() && i < kMaxParamLines; ++i) out += lines[i];
  if (lines.size() > kMaxParamLines)
    out += detail::concat("\n  ... and ", lines.size() - kMaxParamLines, " more parameters");
  return out;
}

std::size_t count_params(const std::vector<OptimizerStateTensor>& tensors) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (i == 0 || tensors[i - 1].param_name != tensors[i].param_name) ++count;
  }
  return count;
}

}  // namespace

std::vector<OptimizerStateTensor> OptimizerStateInspection::misplaced() const {
  std::vector<OptimizerStateTensor> out;
  for (const OptimizerStateTensor& t : tensors) {
    if (t.misplaced()) out.push_back(t);
  }
  return out;
}

OptimizerStateInspection inspect_optimizer_state(const torch::optim::Optimizer& optimizer,
                                                 const torch::nn::Module* module) {
  return walk(optimizer, module).inspection;
}

void check_optimizer_state(const torch::optim::Optimizer& optimizer, const torch::nn::Module* module) {
  check_optimizer_state_tensors(inspect_optimizer_state(optimizer, module).tensors,
                                "berth::place_optimizer_state(optimizer) moves every state tensor to its "
                                "parameter's device; berth's Trainer does this on resume.");
}

void check_optimizer_state_tensors(const std::vector<OptimizerStateTensor>& tensors, std::string_view fix) {
  std::vector<OptimizerStateTensor> misplaced;
  for (const OptimizerStateTensor& t : tensors)
    if (t.misplaced()) misplaced.push_back(t);
  const std::size_t params = count_params(misplaced);
  BERTH_CHECK_AS(PlacementError, misplaced.empty(), "optimizer state: ", misplaced.size(),
                 misplaced.size() == 1 ? " state tensor" : " state tensors", " (of ", params,
                 params == 1 ? " parameter) " : " parameters) ", misplaced.size() == 1 ? "is" : "are",
                 " on another device than the parameter:", misplaced_lines(misplaced), "\nFix: ", fix);
}

std::string OptimizerStatePlacementReport::summary() const {
  std::ostringstream out;
  out << "optimizer state: ";
  if (state_tensors == 0) {
    out << "no state tensors yet";
  } else if (moved_tensors == 0) {
    out << "all " << state_tensors << (state_tensors == 1 ? " tensor" : " tensors")
        << " already on their parameters' devices";
  } else {
    out << "moved " << moved_tensors << (moved_tensors == 1 ? " tensor" : " tensors") << " ("
        << format_bytes(moved_bytes) << ") to follow their parameters";
    for (std::size_t i = 0; i < moved_from.size(); ++i) {
      out << (i == 0 ? ": " : ", ") << moved_from[i].count << " from " << device_name(moved_from[i].device);
    }
  }
  if (!unknown_states.empty()) {
    out << "; " << unknown_states.size() << (unknown_states.size() == 1 ? " state" : " states")
        << " of unknown type left alone";
  }
  return out.str();
}

OptimizerStatePlacementReport place_optimizer_state(torch::optim::Optimizer& optimizer,
                                                    PlacementPolicy policy, const torch::nn::Module* module) {
  Walk found = walk(optimizer, module);
  const OptimizerStateInspection& inspection = found.inspection;
  OptimizerStatePlacementReport report;
  report.state_tensors = static_cast<int64_t>(inspection.tensors.size());
  report.unknown_states = inspection.unknown_states;

  if (policy == PlacementPolicy::Strict) {
    check_optimizer_state(optimizer, module);
    return report;
  }

  std::vector<OptimizerStateTensor> from_meta;
  for (const OptimizerStateTensor& t : inspection.tensors) {
    if (t.misplaced() && t.state_device.is_meta()) from_meta.push_back(t);
  }
  BERTH_CHECK_AS(
      PlacementError, from_meta.empty(), "optimizer state: cannot move ", from_meta.size(),
      from_meta.size() == 1 ? " state tensor" : " state tensors",
      " from meta to its parameter's device: meta tensors have a shape and dtype but no data, so "
      "this state was never materialised:",
      misplaced_lines(from_meta),
      "\nFix: load the optimizer state from a checkpoint onto a real device, or start the optimizer "
      "afresh. Nothing was moved.");

  // Copy first, assign afterwards, so a failing copy leaves the state as it was.
  std::vector<std::pair<std::size_t, at::Tensor>> moved;
  for (std::size_t i = 0; i < inspection.tensors.size(); ++i) {
    const OptimizerStateTensor& t = inspection.tensors[i];
    if (!t.misplaced()) continue;
    try {
      moved.emplace_back(i, found.handles[i]->to(t.param_device));
    } catch (const c10::Error& error) {
      BERTH_FAIL("optimizer state: copying ", t.param_name, " ", t.state_name, " (", format_bytes(t.bytes),
                 ") from ", device_name(t.state_device), " to ", device_name(t.param_device),
                 " failed; nothing was moved. libtorch said: ", error.what_without_backtrace());
    }
  }
  std::vector<TensorInfo> moved_info;
  for (auto& [index, tensor] : moved) {
    // The state owns these tensors alone, so replacing the handle is enough (unlike parameters).
    *found.handles[index] = std::move(tensor);
    const OptimizerStateTensor& t = inspection.tensors[index];
    TensorInfo info;
    info.name = t.param_name + "." + t.state_name;
    info.device = t.state_device;
    info.bytes = t.bytes;
    moved_info.push_back(std::move(info));
    ++report.moved_tensors;
    report.moved_bytes += t.bytes;
  }
  report.moved_from = group_by_device(moved_info);
  return report;
}

}  // namespace berth
