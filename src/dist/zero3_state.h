// The state ZeRO stage 3's partitioned parameters share across their source files: parameters, blocks, trace.
#pragma once

#include "berth/dist/zero3_parameters.h"
#include "berth/model/layer_hooks.h"

#include <torch/torch.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace berth::dist::zero3 {

enum class BlockState { Released, InFlight, Gathered };

struct Param {
  std::string name;
  at::Tensor param;  // the model's parameter (its data changes, the variable stays)
  std::vector<int64_t> shape;
  int64_t numel = 0;
  bool persistent = false;
  int block = -1;            // index into Zero3State::blocks; -1 for persistent parameters
  int64_t block_offset = 0;  // where its elements start in the block's flat buffer
  int64_t begin = 0;         // this rank's piece: elements [begin, end) of the flattened parameter
  int64_t end = 0;
  at::Tensor piece;  // (end - begin,): on the CPU with offload_param, else on the parameter's device
};

struct Block {
  std::string name;
  std::vector<size_t> params;  // indices into Zero3State::params (partitioned ones only)
  int64_t numel = 0;
  // (numel,): the block's full parameters end to end. Its storage is allocated while the block is gathered
  // and freed on release; the parameters' data are views into it then. Tensors that autograd saved from a
  // parameter's view (linear's weight.t()) share this storage, so they free with it and see the values of
  // the next gather.
  at::Tensor flat;
  BlockState state = BlockState::Released;
  std::unique_ptr<PendingWork> pending;
  // Uses of the block in progress: a forward use from before_forward to after_forward, a backward one from
  // its gather to its release. The block is released when the last one ends, so a block used again while
  // one use is live (a tied decoder inside the head that holds its bias) stays gathered for both.
  int live = 0;
  int declared_uses = 0;  // how often hook_blocks() names it: its uses per forward
};

// A forward use begun and not yet ended: its block and its position in the traced order (-1: off the trace).
struct OpenUse {
  int block = -1;
  int position = -1;
};

// "bert.embeddings, bert.encoder.layer.0, ..., classifier": the blocks for an error message, at most five.
std::string describe_blocks(const std::vector<std::string>& names);

// The state shared by PartitionedParameters, the model's hooks and the autograd wrappers; whichever lives
// longest keeps it. Its members are defined by job: blocks (zero3_blocks.cpp), gather, release and prefetch
// (zero3_gather.cpp), the traced order of uses (zero3_trace.cpp), autograd's end-of-backward release
// (zero3_autograd.cpp).
struct Zero3State {
  std::recursive_mutex mutex;
  std::shared_ptr<Communicator> comm;
  ZeroOptions options;
  bool attached = false;  // partitioned and owned by a live PartitionedParameters
  std::vector<Param> params;
  std::vector<Block> blocks;
  std::vector<std::string> block_names;  // the model's hook blocks, each once, in order of first use
  std::unordered_map<std::string, int> block_index;
  int64_t declared_total = 0;  // uses per forward, as hook_blocks() lists them
  // The block of each use in the first forward, in order (a tied block appears once per use); complete once
  // it holds every declared use, a block is used more often than declared (a new forward) or backward runs.
  std::vector<int> trace;
  std::vector<int> traced_uses;  // per block: its uses in `trace`
  bool trace_complete = false;
  size_t cursor = 0;          // uses of the current forward so far: the next use's position in `trace`
  std::vector<OpenUse> open;  // forward uses begun and not ended, innermost last
  bool callback_queued = false;
  // gather_all() holds every block whole until release_all(): forwards and backwards in between (an
  // evaluation after training, before the model is saved) gather nothing and release nothing.
  bool held_whole = false;
  int64_t full_bytes = 0;  // bytes of flat buffers allocated now
  Zero3Stats stats;

  // zero3_blocks.cpp
  void check_attached() const;
  int index_of(const std::string& name) const;
  void reset_blocks(const std::vector<std::string>& uses);
  void add_params(torch::nn::Module& model, const FlatLayout& layout,
                  const std::vector<ParamSegment>& segments);
  void add_to_block(Param& param);
  void keep_piece(Param& param, int64_t begin, int64_t end);
  void release_new_blocks();

  // zero3_gather.cpp
  void allocate(Block& block);
  void free_storage(Block& block);
  void start_gather(int index, bool prefetch);
  void finish_gather(int index);
  void release(int index);
  void release_all();
  void end_live_use(int index);
  void prefetch(int position, bool forward);

  // zero3_trace.cpp
  int begin_use(int index);
  int end_use(int index);

  // zero3_autograd.cpp
  void queue_final_release(const std::shared_ptr<Zero3State>& self);
};

// zero3_autograd.cpp: the autograd wrappers find their state by id (a custom Function's context keeps
// IValues only).
int64_t register_state(const std::shared_ptr<Zero3State>& state);
void unregister_state(int64_t id);
// The layer hooks that gather and release the blocks of the model partitioned with `state`.
std::shared_ptr<LayerHooks> make_layer_hooks(std::shared_ptr<Zero3State> state, int64_t id);

}  // namespace berth::dist::zero3
