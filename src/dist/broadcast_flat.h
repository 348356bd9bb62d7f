// broadcast_flat: rank 0's values of many tensors copied to every rank in a handful of flat broadcasts.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "berth/dist/communicator.h"

namespace torch::nn {
class Module;
}

namespace berth::dist {

// Copies root's values of `tensors` to every rank: one broadcast per (dtype, device) group, through a flat
// buffer, so a model of hundreds of tensors costs a handful of collectives. `what` names them in errors.
void broadcast_flat(Communicator& comm, const std::vector<at::Tensor>& tensors, const std::string& what);

// Rank 0's parameters (and, with `buffers`, its buffers) on every rank, without recording autograd history.
void broadcast_rank0_model(Communicator& comm, torch::nn::Module& model, bool buffers);

}  // namespace berth::dist
