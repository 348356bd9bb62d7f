// share_parameters: a berth model's parameters become views of a caller's tensors (no copy), checked by name,
// shape, dtype and device first.
#include "berth/model/shared_parameters.h"

#include <torch/nn/module.h>

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "berth/core/error.h"
#include "berth/device/device.h"
#include "core/text.h"

namespace berth {
namespace {

std::string shape_text(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << (sizes.size() == 1 ? ",)" : ")");
  return out.str();
}

// The first few names of `tensors`, for a message about a name that is not there.
std::string some_names(const SharedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors) {
    if (names.size() == 3) break;
    names.push_back(name);
  }
  return text::join(names, ", ") + (tensors.size() > names.size() ? ", ..." : "");
}

bool is_ignored(const CheckpointLayout& layout, const std::string& name) {
  return std::find(layout.ignored.begin(), layout.ignored.end(), name) != layout.ignored.end();
}

// Checks that `theirs` can stand for berth's parameter `name` (`ours`); `device`: the device of the tensors
// checked before.
void check_shareable(const std::string& name, const at::Tensor& ours, const at::Tensor& theirs,
                     const CheckpointLayout& layout, const std::string& source,
                     std::optional<c10::Device>& device) {
  BERTH_CHECK(theirs.sizes() == ours.sizes(), source, "'s ", name, " is ", shape_text(theirs.sizes()),
              " where berth's ", layout.architecture, " of the same config has ", shape_text(ours.sizes()),
              ". Fix: give a model whose config matches its weights (a classifier for the data's labels: "
              "num_labels= and id2label= of the data's classes)");
  BERTH_CHECK(theirs.scalar_type() == ours.scalar_type(), source, "'s ", name, " is ",
              c10::toString(theirs.scalar_type()), "; berth trains ", c10::toString(ours.scalar_type()),
              " weights (bf16/fp16 are autocast over them). Fix: model.float() before passing it");
  BERTH_CHECK(!device || *device == theirs.device(), source, " has tensors on two devices: ", name, " on ",
              device_name(theirs.device()), ", others on ", device_name(*device),
              ". Fix: model.to(one device) before passing it");
  BERTH_CHECK(theirs.layout() == c10::kStrided && !theirs.is_quantized(), source, "'s ", name,
              " is not a plain dense tensor. Fix: pass a model with ordinary (unquantized, dense) weights");
  device = theirs.device();
}

}  // namespace

LoadReport share_parameters(torch::nn::Module& module, const SharedTensors& tensors,
                            const CheckpointLayout& layout, const std::string& source) {
  std::set<std::string> known;
  std::optional<c10::Device> device;
  std::vector<std::pair<at::Tensor, at::Tensor>> shares;  // checked first, then shared: all or nothing
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    const auto it = tensors.find(name);
    BERTH_CHECK(it != tensors.end(), source, " has no tensor ", name, ", which berth's ", layout.architecture,
                " of its config has (", tensors.size(), " tensors given: ", some_names(tensors),
                "). Fix: pass the model itself, a ", layout.architecture, ", as transformers builds it");
    check_shareable(name, item.value(), it->second, layout, source, device);
    shares.emplace_back(item.value(), it->second.detach());
    known.insert(name);
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) known.insert(item.key());
  for (auto& [ours, theirs] : shares) ours.set_data(theirs);  // one storage: theirs
  LoadReport report;
  for (const auto& [name, tensor] : tensors)
    if (!known.count(name) && !is_ignored(layout, name)) report.unexpected.push_back(name);
  if (!report.unexpected.empty())
    report.warnings.push_back("Some tensors of " + source + " are not used by berth's " +
                              layout.architecture + ": " + text::join(report.unexpected, ", "));
  return report;
}

}  // namespace berth
