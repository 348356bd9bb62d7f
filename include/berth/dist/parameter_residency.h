// ParameterResidency: where a rank's parameters live between steps (whole, or ZeRO-3's 1/N pieces) and how
// they become whole for a save, an evaluation or a load.
#pragma once

#include <cstdint>

namespace torch::nn {
class Module;
}

namespace berth::dist {

class ParameterResidency {
 public:
  virtual ~ParameterResidency();
  // Before the model is saved, evaluated or loaded into, every rank calls gather() (full parameters in
  // place) and after it release(). Collective; no-ops where parameters are whole.
  virtual void gather() = 0;
  virtual void release() = 0;
  // Bytes of parameters this rank holds between steps.
  virtual int64_t parameter_bytes(torch::nn::Module& model) const = 0;
};

}  // namespace berth::dist
