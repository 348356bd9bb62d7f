// ZeRO stage 3's gathers: a block's storage allocated and filled from every rank's pieces, released after
// its last live use, and the next blocks in traced order prefetched.
#include "zero3_state.h"

#include <algorithm>

namespace berth::dist::zero3 {
namespace {

c10::StorageImpl* storage_of(const at::Tensor& tensor) { return tensor.storage().unsafeGetStorageImpl(); }

}  // namespace

void Zero3State::allocate(Block& block) {
  c10::StorageImpl* storage = storage_of(block.flat);
  const size_t bytes = static_cast<size_t>(block.numel) * block.flat.element_size();
  storage->set_data_ptr_noswap(storage->allocator()->allocate(bytes));
  storage->set_nbytes(bytes);
  full_bytes += static_cast<int64_t>(bytes);
  stats.peak_full_bytes = std::max(stats.peak_full_bytes, full_bytes);
}

void Zero3State::free_storage(Block& block) {
  c10::StorageImpl* storage = storage_of(block.flat);
  full_bytes -= static_cast<int64_t>(storage->nbytes());
  storage->set_data_ptr_noswap(at::DataPtr(nullptr, block.flat.device()));
  storage->set_nbytes(0);
}

// Starts the all-gather of block `index`: every rank writes its pieces into a zeroed buffer and the buffers
// are summed (the pieces are disjoint, so the sum is exact).
void Zero3State::start_gather(int index, bool prefetch) {
  Block& block = blocks[index];
  if (block.state != BlockState::Released || block.numel == 0) return;
  torch::NoGradGuard no_grad;
  allocate(block);
  block.flat.zero_();
  for (size_t i : block.params) {
    const Param& param = params[i];
    if (param.end > param.begin)
      block.flat.narrow(0, param.block_offset + param.begin, param.end - param.begin)
          .copy_(param.piece, /*non_blocking=*/true);
  }
  if (comm->world_size() > 1) {
    std::vector<at::Tensor> tensors{block.flat};
    block.pending = comm->all_reduce_sum_async(tensors, "ZeRO-3 gather of " + block.name + "'s parameters");
  }
  block.state = BlockState::InFlight;
  stats.gathers += 1;
  stats.prefetches += prefetch ? 1 : 0;
  stats.gathered_bytes += block.numel * block.flat.element_size();
}

void Zero3State::finish_gather(int index) {
  Block& block = blocks[index];
  if (block.numel == 0 || block.state == BlockState::Gathered) return;
  if (block.state == BlockState::Released) start_gather(index, false);
  if (block.pending) {
    auto pending = std::move(block.pending);
    pending->wait();
  }
  for (size_t i : block.params) {
    Param& param = params[i];
    param.param.set_data(block.flat.narrow(0, param.block_offset, param.numel).view(param.shape));
  }
  block.state = BlockState::Gathered;
}

void Zero3State::release(int index) {
  Block& block = blocks[index];
  if (held_whole || block.numel == 0 || block.state == BlockState::Released) return;
  if (block.pending) {
    // Every rank takes part in the collective, so it completes before the buffer goes.
    auto pending = std::move(block.pending);
    pending->wait();
  }
  for (size_t i : block.params) {
    Param& param = params[i];
    param.param.set_data(at::empty({0}, param.param.options().requires_grad(false)));
  }
  free_storage(block);
  block.state = BlockState::Released;
  stats.releases += 1;
}

// Every block released and no use live: the end of a backward, a new forward, release_all().
void Zero3State::release_all() {
  for (Block& block : blocks) block.live = 0;
  open.clear();
  for (size_t i = 0; i < blocks.size(); ++i) release(static_cast<int>(i));
}

// One use of block `index` ended (forward or backward): released when no other use is live.
void Zero3State::end_live_use(int index) {
  Block& block = blocks[index];
  block.live = std::max(0, block.live - 1);
  if (block.live == 0) release(index);
}

// Starts the gathers of the uses after (forward) or before (backward) traced position `position`, as many
// blocks as fit in stage3_prefetch_bucket_size elements; a block gathered or in flight already is skipped
// (a tied block's other use), one released since is fetched again.
void Zero3State::prefetch(int position, bool forward) {
  if (!options.overlap_comm || !trace_complete || position < 0) return;
  int64_t budget = options.stage3_prefetch_bucket_size;
  const auto n = static_cast<int>(trace.size());
  for (int k = forward ? position + 1 : position - 1; k >= 0 && k < n; k += forward ? 1 : -1) {
    Block& block = blocks[trace[k]];
    if (block.state != BlockState::Released || block.numel == 0) continue;
    if (block.numel > budget) break;
    budget -= block.numel;
    start_gather(trace[k], true);
  }
}

}  // namespace berth::dist::zero3
