// Lists a module's parameters and buffers with shapes and dtypes, in the order every rank registers them.
#include "berth/dist/model_signature.h"

#include <torch/nn/module.h>

#include <sstream>

namespace berth::dist {
namespace {

// numpy/PyTorch names ("float32"), which users know, rather than c10's ("Float").
std::string dtype_name(c10::ScalarType type) {
  switch (type) {
    case c10::kFloat:
      return "float32";
    case c10::kDouble:
      return "float64";
    case c10::kHalf:
      return "float16";
    case c10::kBFloat16:
      return "bfloat16";
    case c10::kLong:
      return "int64";
    case c10::kInt:
      return "int32";
    case c10::kShort:
      return "int16";
    case c10::kChar:
      return "int8";
    case c10::kByte:
      return "uint8";
    case c10::kBool:
      return "bool";
    default:
      return c10::toString(type);
  }
}

std::string describe(const at::Tensor& t) {
  std::ostringstream out;
  out << "shape [";
  for (int64_t d = 0; d < t.dim(); ++d) out << (d ? ", " : "") << t.size(d);
  out << "] dtype " << dtype_name(t.scalar_type());
  return out.str();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> model_signature(const torch::nn::Module& module) {
  const auto parameters = module.named_parameters(/*recurse=*/true);
  const auto buffers = module.named_buffers(/*recurse=*/true);
  std::vector<std::pair<std::string, std::string>> items;
  items.emplace_back("parameter count", std::to_string(parameters.size()));
  for (const auto& item : parameters) items.emplace_back("parameter " + item.key(), describe(item.value()));
  for (const auto& item : buffers) items.emplace_back("buffer " + item.key(), describe(item.value()));
  return items;
}

}  // namespace berth::dist
