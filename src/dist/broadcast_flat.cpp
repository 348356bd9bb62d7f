// broadcast_flat: tensors grouped by dtype and device, concatenated, broadcast, and copied back.
#include "dist/broadcast_flat.h"

#include <torch/torch.h>

#include <map>
#include <utility>

namespace berth::dist {

void broadcast_flat(Communicator& comm, const std::vector<at::Tensor>& tensors, const std::string& what) {
  std::map<std::pair<std::string, std::string>, std::vector<at::Tensor>> groups;
  for (const at::Tensor& t : tensors) {
    if (t.numel() == 0) continue;
    groups[{std::string(c10::toString(t.scalar_type())), t.device().str()}].push_back(t);
  }
  for (auto& [key, group] : groups) {
    std::vector<at::Tensor> flat_parts;
    flat_parts.reserve(group.size());
    for (const at::Tensor& t : group) flat_parts.push_back(t.reshape({-1}));
    std::vector<at::Tensor> flat{torch::cat(flat_parts)};  // [sum of numels]
    comm.broadcast(flat, 0, what + " (" + key.first + " on " + key.second + ")");
    int64_t offset = 0;
    for (const at::Tensor& t : group) {
      t.copy_(flat[0].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

void broadcast_rank0_model(Communicator& comm, torch::nn::Module& model, bool buffers) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> to_broadcast;
  for (const at::Tensor& p : model.parameters()) to_broadcast.push_back(p);
  if (buffers)
    for (const at::Tensor& b : model.buffers()) to_broadcast.push_back(b);
  broadcast_flat(comm, to_broadcast, "broadcast of rank 0's parameters and buffers");
}

}  // namespace berth::dist
