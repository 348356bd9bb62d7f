// Checking that a batch (and single tensors such as the loss) sits on the model's device, or moving it there.
#pragma once

#include "berth/placement/place.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <map>
#include <string>
#include <string_view>

namespace berth {

// A batch: named tensors ("input_ids", "attention_mask", "labels"). A map keeps messages in a
// stable order. An undefined tensor stands for an absent optional field and is never checked.
using Batch = std::map<std::string, at::Tensor>;

// Throws PlacementError naming every field that is not on `model_device`, with its device,
// shape and dtype, and the fix.
void check_batch(const Batch& batch, c10::Device model_device);

// Move: returns the batch with every field on `device` (fields already there are shared, not
// copied); a field on meta cannot be moved to a real device and throws PlacementError.
// Strict: check_batch(batch, device), then returns the batch unchanged.
Batch place_batch(const Batch& batch, c10::Device device, PlacementPolicy policy = PlacementPolicy::Move);

// Throws PlacementError when `tensor` is not on `device`: "loss is on meta but the model is on
// cpu ...". `what` names the tensor for the message. An undefined tensor throws berth::Error.
void check_tensor_on(const at::Tensor& tensor, std::string_view what, c10::Device device);

}  // namespace berth
