// berth's optimizer.pt: AdamW moments as safetensors, steps and hyperparameters in the metadata.
#include "berth/optim/optimizer_state_file.h"

#include "berth/core/compat.h"
#include "berth/core/error.h"
#include "berth/io/safetensors.h"
#include "berth/optim/adamw.h"

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <sstream>

namespace berth::optim {
namespace {

constexpr const char* kFormat = "berth-adamw";
constexpr const char* kVersion = "1";

std::string shape_text(at::IntArrayRef shape) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

// The optimizer's parameters with their names, in param_groups order.
struct NamedParam {
  std::string name;
  at::Tensor param;
  std::size_t group;
};

std::vector<NamedParam> named_params(const AdamW& optimizer) {
  const std::vector<std::string>& names = optimizer.param_names();
  std::vector<NamedParam> out;
  for (std::size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    for (const at::Tensor& p : optimizer.param_groups()[g].params()) {
      BERTH_BUG(out.size() < names.size(), "AdamW has more parameters than names");
      out.push_back(NamedParam{names[out.size()], p, g});
    }
  }
  BERTH_BUG(out.size() == names.size(), "AdamW has ", names.size(), " names for ", out.size(), " parameters");
  return out;
}

const torch::optim::AdamWParamState* state_of(const AdamW& optimizer, const at::Tensor& param) {
  auto& states = const_cast<AdamW&>(optimizer).state();
  const auto it = states.find(compat::optimizer_state_key(param));
  if (it == states.end() || !it->second) return nullptr;
  const auto* state = dynamic_cast<const torch::optim::AdamWParamState*>(it->second.get());
  BERTH_BUG(state != nullptr, "AdamW state of another type");
  return state;
}

}  // namespace

void save_optimizer_state(const AdamW& optimizer, const std::string& path) {
  std::map<std::string, at::Tensor> tensors;
  std::map<std::string, std::string> metadata{{"format", kFormat}, {"version", kVersion}};
  const std::vector<NamedParam> params = named_params(optimizer);
  for (const NamedParam& named : params) {
    const torch::optim::AdamWParamState* state = state_of(optimizer, named.param);
    if (state == nullptr) continue;
    tensors[named.name + ".exp_avg"] = state->exp_avg();
    tensors[named.name + ".exp_avg_sq"] = state->exp_avg_sq();
    metadata["step." + named.name] = std::to_string(state->step());
  }
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (std::size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    const auto& options =
        static_cast<const torch::optim::AdamWOptions&>(optimizer.param_groups()[g].options());
    nlohmann::ordered_json group;
    group["lr"] = options.lr();
    group["beta1"] = std::get<0>(options.betas());
    group["beta2"] = std::get<1>(options.betas());
    group["eps"] = options.eps();
    group["weight_decay"] = options.weight_decay();
    group["params"] = nlohmann::ordered_json::array();
    for (const NamedParam& named : params) {
      if (named.group == g) group["params"].push_back(named.name);
    }
    groups.push_back(std::move(group));
  }
  metadata["param_groups"] = groups.dump();
  std::ostringstream lr;
  lr.precision(17);
  lr << (optimizer.param_groups().empty() ? 0.0 : optimizer.lr());
  metadata["lr"] = lr.str();
  io::save_safetensors(path, tensors, metadata);
}

namespace {

const char* const kNotBerth = ". Fix: pass an optimizer.pt written by berth (save_optimizer_state)";
const char* const kOtherModel =
    ". Fix: load the optimizer state saved with this model (same architecture, parameter names and order, "
    "and weight-decay groups), or start the optimizer afresh";

// An optimizer state file being read: its tensors, its metadata and its name for messages.
struct StateFile {
  std::string path;
  io::SafetensorsFile file;
  const std::map<std::string, std::string>& metadata() const { return file.metadata(); }
  const std::string& meta(const std::string& key) const {
    const auto it = metadata().find(key);
    BERTH_CHECK(it != metadata().end(), path, ": expected a berth optimizer state file with metadata '", key,
                "', found none", kNotBerth);
    return it->second;
  }
};

// The format and version checks, then metadata param_groups as a JSON array.
nlohmann::json read_param_groups(const StateFile& in) {
  BERTH_CHECK(in.meta("format") == kFormat, in.path, ": expected format '", kFormat, "', found '",
              in.meta("format"), "'", kNotBerth);
  BERTH_CHECK(in.meta("version") == kVersion, in.path, ": expected berth-adamw version ", kVersion,
              ", found '", in.meta("version"),
              "'. Fix: use the berth version that wrote this file, or start the optimizer afresh");
  nlohmann::json groups;
  try {
    groups = nlohmann::json::parse(in.meta("param_groups"));
  } catch (const nlohmann::json::exception& e) {
    BERTH_FAIL(in.path, ": metadata param_groups is not valid JSON (", e.what(), ")", kNotBerth);
  }
  BERTH_CHECK(groups.is_array(), in.path, ": metadata param_groups must be a JSON array, found ",
              groups.type_name(), kNotBerth);
  return groups;
}

// The file's parameters must be the optimizer's: same names, order and groups.
void check_same_parameters(const StateFile& in, const nlohmann::json& groups,
                           const std::vector<NamedParam>& params, size_t optimizer_groups) {
  std::vector<std::string> file_names;
  std::vector<std::size_t> file_groups;
  try {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (const auto& name : groups[g].at("params")) {
        file_names.push_back(name.get<std::string>());
        file_groups.push_back(g);
      }
    }
  } catch (const nlohmann::json::exception& e) {
    BERTH_FAIL(in.path, ": metadata param_groups lacks a valid \"params\" list (", e.what(), ")", kNotBerth);
  }
  for (std::size_t i = 0; i < std::min(file_names.size(), params.size()); ++i) {
    BERTH_CHECK(file_names[i] == params[i].name, in.path, ": parameter ", i, " is '", file_names[i],
                "' in the file but '", params[i].name, "' in this optimizer", kOtherModel);
    BERTH_CHECK(file_groups[i] == params[i].group, in.path, ": parameter '", params[i].name,
                "' is in param group ", file_groups[i], " in the file but in group ", params[i].group,
                " in this optimizer", kOtherModel);
  }
  BERTH_CHECK(file_names.size() == params.size(), in.path, ": the file holds state for ", file_names.size(),
              " parameters in ", groups.size(), " groups, this optimizer has ", params.size(),
              " parameters in ", optimizer_groups, " groups (first extra: '",
              file_names.size() > params.size() ? file_names[params.size()] : params[file_names.size()].name,
              "')", kOtherModel);
  BERTH_CHECK(groups.size() == optimizer_groups, in.path, ": the file has ", groups.size(),
              " param groups, this optimizer ", optimizer_groups, kOtherModel);
}

// One parameter's moments and step, checked against its shape; nullptr when the file has no state for it.
std::unique_ptr<torch::optim::AdamWParamState> read_param_state(const StateFile& in, const NamedParam& named,
                                                                c10::Device state_device) {
  const std::string avg = named.name + ".exp_avg";
  const std::string avg_sq = named.name + ".exp_avg_sq";
  const auto step = in.metadata().find("step." + named.name);
  const bool has_avg = in.file.contains(avg), has_avg_sq = in.file.contains(avg_sq);
  if (!has_avg && !has_avg_sq && step == in.metadata().end()) return nullptr;  // no state yet
  BERTH_CHECK(has_avg && has_avg_sq && step != in.metadata().end(), in.path, ": parameter '", named.name,
              "' has only part of its state (", avg, ", ", avg_sq, ", step.", named.name,
              "). Fix: pass a complete optimizer.pt written by berth (save_optimizer_state)");
  for (const std::string& tensor_name : {avg, avg_sq}) {
    const std::vector<int64_t> shape = in.file.shape(tensor_name);
    BERTH_CHECK(at::IntArrayRef(shape) == named.param.sizes(), in.path, ": parameter '", named.name,
                "' has shape ", shape_text(named.param.sizes()), " in this optimizer but its state ",
                tensor_name, " has shape ", shape_text(shape), " in the file", kOtherModel);
  }
  int64_t step_count = 0;
  try {
    std::size_t used = 0;
    step_count = std::stoll(step->second, &used);
    BERTH_CHECK(used == step->second.size() && step_count >= 0, "");
  } catch (const std::exception&) {
    BERTH_FAIL(in.path, ": metadata step.", named.name, " must be an integer >= 0, found '", step->second,
               "'", kNotBerth);
  }
  const at::TensorOptions to = named.param.options().device(state_device);
  auto state = std::make_unique<torch::optim::AdamWParamState>();
  state->step(step_count);
  state->exp_avg(in.file.tensor(avg).to(to));
  state->exp_avg_sq(in.file.tensor(avg_sq).to(to));
  return state;
}

// Each group's hyperparameters from the file, over the optimizer's current options.
std::vector<std::unique_ptr<torch::optim::AdamWOptions>> read_group_options(const StateFile& in,
                                                                            const nlohmann::json& groups,
                                                                            AdamW& optimizer) {
  std::vector<std::unique_ptr<torch::optim::AdamWOptions>> options(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    try {
      const auto& group = groups[g];
      auto& current = static_cast<torch::optim::AdamWOptions&>(optimizer.param_groups()[g].options());
      auto restored = std::make_unique<torch::optim::AdamWOptions>(current);
      restored->lr(group.at("lr").get<double>());
      restored->betas(std::make_tuple(group.at("beta1").get<double>(), group.at("beta2").get<double>()));
      restored->eps(group.at("eps").get<double>());
      restored->weight_decay(group.at("weight_decay").get<double>());
      options[g] = std::move(restored);
    } catch (const nlohmann::json::exception& e) {
      BERTH_FAIL(in.path, ": metadata param_groups[", g, "] lacks a valid hyperparameter (", e.what(), ")",
                 kNotBerth);
    }
  }
  return options;
}

}  // namespace

void load_optimizer_state(AdamW& optimizer, const std::string& path, c10::Device state_device) {
  const StateFile in{path, io::SafetensorsFile::open(path)};
  const nlohmann::json groups = read_param_groups(in);
  const std::vector<NamedParam> params = named_params(optimizer);
  check_same_parameters(in, groups, params, optimizer.param_groups().size());
  // Read and check everything first, then assign: a bad file leaves the optimizer as it was.
  std::vector<std::unique_ptr<torch::optim::AdamWParamState>> states(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) states[i] = read_param_state(in, params[i], state_device);
  std::vector<std::unique_ptr<torch::optim::AdamWOptions>> options =
      read_group_options(in, groups, optimizer);
  auto& state_map = optimizer.state();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto key = compat::optimizer_state_key(params[i].param);
    if (states[i]) {
      state_map[key] = std::move(states[i]);
    } else {
      state_map.erase(key);
    }
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    static_cast<torch::optim::AdamWOptions&>(optimizer.param_groups()[g].options()) = *options[g];
  }
}

}  // namespace berth::optim
