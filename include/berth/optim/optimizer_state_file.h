// berth's optimizer.pt: AdamW's state as a safetensors file with a documented layout.
#pragma once

#include <c10/core/Device.h>

#include <string>

namespace berth::optim {

class AdamW;

// The file is safetensors (berth/io/safetensors.h):
//   tensors  "<param name>.exp_avg", "<param name>.exp_avg_sq" for every parameter with state, as they are
//            (dtype kept, CPU on disk)
//   metadata "format": "berth-adamw", "version": "1", "step.<param name>": "<int>", "lr": "<group 0's lr>",
//            "param_groups": JSON [{"lr","beta1","beta2","eps","weight_decay","params":[names]}] per group
// Written atomically (temporary file renamed into place).
void save_optimizer_state(const AdamW& optimizer, const std::string& path);

// Replaces `optimizer`'s state with the file's and its groups' hyperparameters (lr, betas, eps, weight
// decay) with the saved ones, as torch's load_state_dict does. State tensors are cast to their parameter's
// dtype and put on `state_device` (default: CPU, as read); berth::place_optimizer_state then moves them next
// to their parameters. A file for other parameters (names, order, count, shapes) throws berth::Error naming
// the first difference and the fix; the optimizer is unchanged then.
void load_optimizer_state(AdamW& optimizer, const std::string& path, c10::Device state_device = c10::kCPU);

}  // namespace berth::optim
