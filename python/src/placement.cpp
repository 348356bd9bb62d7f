// explain_placement's C++ half: a Python module's named tensors, a batch, a loss and an optimizer's state
// checked by berth's placement code (inspect, place's strict check, check_batch, check_tensor_on,
// check_optimizer_state_tensors), each finding with its fix in Python's terms.
#include <torch/csrc/utils/pybind.h>
#include <torch/nn/module.h>

#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"

#include "berth/core/error.h"
#include "berth/device/device.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/inspect.h"
#include "berth/placement/optimizer_state.h"
#include "berth/placement/place.h"

namespace py = pybind11;

namespace berth::python {
namespace {

// (dotted name, "parameter" or "buffer", tensor), as Python's named_parameters() / named_buffers() give them.
using NamedEntry = std::tuple<std::string, std::string, at::Tensor>;
// (parameter name, parameter, state name, state tensor) for every tensor of an optimizer's state.
using StateEntry = std::tuple<std::string, at::Tensor, std::string, at::Tensor>;

// A C++ module holding the same tensors (shared, not copied) under the same dotted names, so that berth's
// placement code, written for torch::nn::Module, reads a Python model as it reads its own.
std::shared_ptr<torch::nn::Module> mirror_module(const std::vector<NamedEntry>& tensors) {
  auto root = std::make_shared<torch::nn::Module>("model");
  std::map<std::string, std::shared_ptr<torch::nn::Module>> children;
  for (const auto& [name, kind, tensor] : tensors) {
    std::shared_ptr<torch::nn::Module> parent = root;
    std::string prefix;
    size_t start = 0;
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', start)) {
      const std::string part = name.substr(start, dot - start);
      prefix += (prefix.empty() ? "" : ".") + part;
      auto& child = children[prefix];
      if (!child) child = parent->register_module(part, std::make_shared<torch::nn::Module>(part));
      parent = child;
      start = dot + 1;
    }
    // requires_grad as it is: register_parameter sets the flag on the (shared) tensor.
    if (kind == "parameter")
      parent->register_parameter(name.substr(start), tensor, tensor.requires_grad());
    else
      parent->register_buffer(name.substr(start), tensor);
  }
  return root;
}

// The C++ message's finding with a fix for Python code in place of its C++ one.
std::string with_fix(const std::string& message, const std::string& fix) {
  const size_t at = message.find("\nFix:");
  return (at == std::string::npos ? message : message.substr(0, at)) + "\nFix: " + fix;
}

// Where the run should be when the caller names no device: the real device holding most bytes (meta holds
// none), cpu when there is none.
c10::Device busiest_device(const ModuleInspection& inspection) {
  std::optional<DeviceGroup> best;
  for (const DeviceGroup& group : inspection.groups)
    if (!group.device.is_meta() && (!best || group.bytes > best->bytes)) best = group;
  return best ? best->device : c10::Device(c10::kCPU);
}

c10::Device named_device(const std::string& name) {
  try {
    return c10::Device(name);
  } catch (const c10::Error&) {
    BERTH_FAIL("explain_placement: device='", name,
               "' is not a device name. Fix: \"cpu\", \"cuda\", \"cuda:1\" "
               "or \"meta\" (None: the device holding most of the model)");
  }
}

std::string model_fix(const ModuleInspection& inspection, c10::Device target) {
  const std::string where = device_name(target);
  for (const TensorInfo& info : inspection.tensors)
    if (info.device.is_meta() && !target.is_meta())
      return "meta tensors have a shape but no data, so model.to(\"" + where +
             "\") cannot move them: load their weights first: from_pretrained(DIR) without device_map (or "
             "with "
             "device_map=\"" +
             where + "\"), or model.to_empty(device=\"" + where +
             "\") followed by model.load_state_dict(weights); then call explain_placement again.";
  return "model.to(\"" + where + "\") puts every parameter and buffer on " + where +
         " (or load it with device_map=\"" + where + "\"); berth.Trainer places a model it loads itself.";
}

void check_model(torch::nn::Module& module, const ModuleInspection& inspection, c10::Device target,
                 std::vector<std::string>& problems) {
  try {
    place(module, target, PlacementPolicy::Strict);
  } catch (const PlacementError& e) {
    problems.push_back(with_fix(e.what(), model_fix(inspection, target)));
  }
}

void check_batch_and_loss(const std::optional<std::map<std::string, at::Tensor>>& batch,
                          const std::optional<at::Tensor>& loss, c10::Device target,
                          std::vector<std::string>& problems) {
  const std::string where = device_name(target);
  if (batch) {
    try {
      check_batch(*batch, target);
    } catch (const PlacementError& e) {
      problems.push_back(with_fix(e.what(), "batch = {k: v.to(\"" + where +
                                                "\") for k, v in batch.items()} (HF's Trainer and "
                                                "berth.Trainer move their own batches)."));
    }
  }
  if (loss) {
    try {
      check_tensor_on(*loss, "loss", target);
    } catch (const PlacementError& e) {
      problems.push_back(
          with_fix(e.what(), "compute the loss from the model's outputs and a batch on " + where + "."));
    }
  }
}

void check_optimizer(const std::vector<StateEntry>& state, std::vector<std::string>& problems) {
  std::vector<OptimizerStateTensor> tensors;
  for (const auto& [param_name, param, state_name, value] : state) {
    OptimizerStateTensor t;
    t.param_name = param_name;
    t.param_device = param.device();
    t.state_name = state_name;
    t.state_device = value.device();
    t.bytes = value.numel() * static_cast<int64_t>(value.element_size());
    tensors.push_back(std::move(t));
  }
  try {
    check_optimizer_state_tensors(
        tensors,
        "move each state tensor to its parameter's device (for p, s in optimizer.state.items(): for k, v in "
        "s.items(): s[k] = v.to(p.device)), or load the optimizer's state_dict after model.to(device): "
        "torch.optim.Optimizer.load_state_dict casts the state to the parameters' devices.");
  } catch (const PlacementError& e) {
    problems.push_back(e.what());
  }
}

py::dict placement_report(const std::vector<NamedEntry>& tensors,
                          const std::optional<std::map<std::string, at::Tensor>>& batch,
                          const std::optional<at::Tensor>& loss, const std::optional<std::string>& device,
                          const std::vector<StateEntry>& optimizer_state) {
  const auto module = mirror_module(tensors);
  const ModuleInspection inspection = inspect(*module);
  const c10::Device target = device ? named_device(*device) : busiest_device(inspection);
  std::vector<std::string> problems;
  check_model(*module, inspection, target, problems);
  check_batch_and_loss(batch, loss, target, problems);
  check_optimizer(optimizer_state, problems);
  std::string text = inspection.summary("model");
  for (const DeviceGroup& group : inspection.groups) text += "\n  " + group.describe();
  text += "\nexpected device: " + device_name(target);
  for (const std::string& problem : problems) text += "\n\n" + problem;
  if (problems.empty()) text += "\nok: everything checked is on " + device_name(target);
  py::list groups;
  for (const DeviceGroup& group : inspection.groups)
    groups.append(py::dict(py::arg("device") = device_name(group.device), py::arg("tensors") = group.count,
                           py::arg("bytes") = group.bytes, py::arg("first_names") = group.first_names));
  return py::dict(py::arg("report") = text, py::arg("ok") = problems.empty(),
                  py::arg("device") = device_name(target), py::arg("problems") = problems,
                  py::arg("groups") = groups, py::arg("total_bytes") = inspection.total_bytes,
                  py::arg("table") = inspection.table());
}

}  // namespace

void bind_placement(py::module_& m) {
  m.def("placement_report", &placement_report, py::arg("tensors"), py::arg("batch") = py::none(),
        py::arg("loss") = py::none(), py::arg("device") = py::none(),
        py::arg("optimizer_state") = std::vector<StateEntry>{});
}

}  // namespace berth::python
