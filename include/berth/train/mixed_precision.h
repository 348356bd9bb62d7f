// Mixed precision: choosing fp32/fp16/bf16 for a device (HF's --fp16/--bf16 checks) and the autocast region
// the forward pass runs in (torch.autocast's C++ side).
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string_view>

#include "berth/train/precision_options.h"

namespace berth::train {

// "fp32" | "fp16" | "bf16" (also "no", as HF's mixed_precision, for fp32); anything else throws berth::Error.
Precision parse_precision(std::string_view name);

// The compute dtype of autocast for `precision` (fp32: Float, fp16: Half, bf16: BFloat16).
c10::ScalarType compute_dtype(Precision precision);

// HF's --fp16/--bf16 (or DeepSpeed's fp16/bf16 blocks) for a run on `device`. Throws berth::Error when both
// are set, for fp16 on a device that is not CUDA (as HF: "fp16 mixed precision requires a GPU"), and for bf16
// where this libtorch cannot autocast to bf16. Loss scaling is kept for fp16 only.
PrecisionOptions resolve_precision(bool fp16, bool bf16, const c10::Device& device,
                                   LossScaleOptions loss_scale = {});

// Whether this libtorch autocasts to `dtype` on `device_type` (probed once per pair with a real matmul on the
// CPU; CUDA answers whether CUDA is available).
bool autocast_available(c10::DeviceType device_type, c10::ScalarType dtype);

// The forward pass's autocast region, as `with torch.autocast(device_type, dtype)`: for bf16 (CPU or CUDA)
// and fp16 (CUDA), matmuls and linears run in the low precision while parameters stay float32 (the master
// weights). On exit the previous enabled flag and dtype come back and, when the outermost region closes, the
// cache of casted weights is cleared (it holds a copy of every weight used). fp32 does nothing. Wrap the
// forward and the loss, not backward (autograd already runs each op's backward in its forward's dtype), and
// open a new guard per micro-step so the cached copies never outlive an optimizer step.
class AutocastGuard {
 public:
  // Throws berth::Error for fp16 on the CPU and for a device type that is neither CPU nor CUDA.
  AutocastGuard(Precision precision, c10::DeviceType device_type);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

  bool active() const { return active_; }

 private:
  c10::DeviceType device_type_;
  bool active_ = false;
  bool previous_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::ScalarType::Undefined;
};

}  // namespace berth::train
