// ZeRO stage 3's blocks: the model's hook blocks, each parameter's place in one and this rank's piece of it.
#include "berth/core/error.h"
#include "zero3_state.h"

#include <map>

namespace berth::dist::zero3 {

std::string describe_blocks(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names.size() > 5 && i >= 2 && i + 2 < names.size()) {
      if (i == 2) text += ", ...";
      continue;
    }
    text += (text.empty() ? "" : ", ") + names[i];
  }
  return text.empty() ? "none" : text;
}

void Zero3State::check_attached() const {
  BERTH_CHECK(attached,
              "ZeRO stage 3: the model's parameters are partitioned but their PartitionedParameters is gone. "
              "Fix: call PartitionedParameters::unpartition() before destroying it while the model lives on");
}

int Zero3State::index_of(const std::string& name) const {
  auto it = block_index.find(name);
  BERTH_BUG(it != block_index.end(), "layer hook for unknown block ", name);
  return it->second;
}

// No parameters, and the model's hook blocks (its uses in forward order, a block named once per use), none
// gathered.
void Zero3State::reset_blocks(const std::vector<std::string>& uses) {
  params.clear();
  blocks.clear();
  block_index.clear();
  block_names.clear();
  trace.clear();
  traced_uses.clear();
  trace_complete = false;
  cursor = 0;
  open.clear();
  full_bytes = 0;
  stats = {};
  for (const std::string& name : uses) {
    auto [it, added] = block_index.emplace(name, static_cast<int>(blocks.size()));
    if (added) {
      blocks.emplace_back();
      blocks.back().name = name;
      block_names.push_back(name);
    }
    blocks[it->second].declared_uses += 1;
  }
  declared_total = static_cast<int64_t>(uses.size());
  traced_uses.assign(blocks.size(), 0);
}

// One Param per entry of `layout` (the model's parameters by name); `segments` are this rank's pieces.
void Zero3State::add_params(torch::nn::Module& model, const FlatLayout& layout,
                            const std::vector<ParamSegment>& segments) {
  const auto named = model.named_parameters(/*recurse=*/true);
  std::map<int64_t, const ParamSegment*> mine;
  for (const ParamSegment& segment : segments) mine[segment.param] = &segment;
  for (size_t i = 0; i < layout.entries.size(); ++i) {
    const FlatEntry& entry = layout.entries[i];
    const at::Tensor* found = named.find(entry.name);
    BERTH_CHECK(found != nullptr, "ZeRO stage 3: the layout names parameter ", entry.name,
                " but the model has none by that name. Fix: build the layout from this model's parameters");
    BERTH_CHECK(found->numel() == entry.numel, "ZeRO stage 3: parameter ", entry.name, " has ",
                found->numel(), " elements but the layout says ", entry.numel,
                ". Fix: build the layout from this model");
    Param param;
    param.name = entry.name;
    param.param = *found;
    param.shape = found->sizes().vec();
    param.numel = entry.numel;
    param.persistent = entry.numel <= options.stage3_param_persistence_threshold;
    if (!param.persistent) {
      add_to_block(param);
      const auto it = mine.find(static_cast<int64_t>(i));
      if (it != mine.end())
        keep_piece(param, it->second->begin, it->second->end);
      else
        keep_piece(param, 0, 0);
    }
    params.push_back(std::move(param));
  }
}

// A partitioned parameter into its block's flat buffer (after the block's earlier parameters).
void Zero3State::add_to_block(Param& param) {
  const std::string block_name = block_of(block_names, param.name);
  BERTH_CHECK(!block_name.empty() && block_index.count(block_name), "ZeRO stage 3: parameter ", param.name,
              " belongs to no block with layer hooks (", describe_blocks(block_names),
              "). Fix: raise stage3_param_persistence_threshold to at least ", param.numel,
              " to keep it whole");
  param.block = block_index.at(block_name);
  Block& block = blocks[param.block];
  if (block.params.empty()) {
    block.flat = at::empty({0}, param.param.options().requires_grad(false));
  } else {
    const at::Tensor& first = params[block.params.front()].param;
    BERTH_CHECK(first.scalar_type() == param.param.scalar_type() && first.device() == param.param.device(),
                "ZeRO stage 3: the parameters of ", block_name, " must share one dtype and device; ",
                param.name, " is ", param.param.dtype(), " on ", param.param.device(), ", ",
                params[block.params.front()].name, " is ", first.dtype(), " on ", first.device());
  }
  param.block_offset = block.numel;
  block.numel += param.numel;
  block.params.push_back(params.size());
}

// This rank's piece [begin, end) of a partitioned parameter (empty where it owns none), copied out: to the
// CPU with offload_param.
void Zero3State::keep_piece(Param& param, int64_t begin, int64_t end) {
  param.begin = begin;
  param.end = end;
  torch::NoGradGuard no_grad;
  at::Tensor piece = param.param.detach().reshape({-1}).slice(0, param.begin, param.end);
  if (options.offload_param.enabled()) {
    at::TensorOptions cpu = piece.options().device(at::kCPU);
    const bool pin = options.offload_param.pin_memory && param.param.is_cuda();
    param.piece = at::empty({param.end - param.begin}, cpu.pinned_memory(pin));
    param.piece.copy_(piece);
  } else {
    param.piece = piece.clone();
  }
}

// Every flat buffer starts without storage; the parameters point at empty tensors until gathered.
void Zero3State::release_new_blocks() {
  for (Block& block : blocks) {
    if (block.numel == 0) continue;
    block.flat = at::empty({block.numel}, block.flat.options());
    full_bytes += block.flat.storage().nbytes();
    block.state = BlockState::Gathered;
  }
  for (size_t i = 0; i < blocks.size(); ++i) release(static_cast<int>(i));
  stats = {};
}

}  // namespace berth::dist::zero3
