// ZeRO stage 3's partitioned parameters: per-block flat buffers whose storage exists only while the block is
// gathered, filled from every rank's pieces, with autograd wrappers that gather before a block's backward and
// release after it.
#include "berth/dist/zero3_parameters.h"

#include "berth/core/error.h"
#include "berth/model/layer_hooks.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/torch.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace berth::dist {
namespace {

enum class BlockState { Released, InFlight, Gathered };

struct Param {
  std::string name;
  at::Tensor param;  // the model's parameter (its data changes, the variable stays)
  std::vector<int64_t> shape;
  int64_t numel = 0;
  bool persistent = false;
  int block = -1;            // index into Core::blocks; -1 for persistent parameters
  int64_t block_offset = 0;  // where its elements start in the block's flat buffer
  int64_t begin = 0;         // this rank's piece: elements [begin, end) of the flattened parameter
  int64_t end = 0;
  at::Tensor piece;  // (end - begin,): on the CPU with offload_param, else on the parameter's device
};

struct Block {
  std::string name;
  std::vector<size_t> params;  // indices into Core::params (partitioned ones only)
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

// The state shared by PartitionedParameters, the model's hooks and the autograd wrappers; whichever lives
// longest keeps it.
struct Core {
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

  void check_attached() const {
    BERTH_CHECK(
        attached,
        "ZeRO stage 3: the model's parameters are partitioned but their PartitionedParameters is gone. "
        "Fix: call PartitionedParameters::unpartition() before destroying it while the model lives on");
  }

  int index_of(const std::string& name) const {
    auto it = block_index.find(name);
    BERTH_BUG(it != block_index.end(), "layer hook for unknown block ", name);
    return it->second;
  }

  static c10::StorageImpl* storage_of(const at::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

  void allocate(Block& b) {
    c10::StorageImpl* storage = storage_of(b.flat);
    const size_t bytes = static_cast<size_t>(b.numel) * b.flat.element_size();
    storage->set_data_ptr_noswap(storage->allocator()->allocate(bytes));
    storage->set_nbytes(bytes);
    full_bytes += static_cast<int64_t>(bytes);
    stats.peak_full_bytes = std::max(stats.peak_full_bytes, full_bytes);
  }

  void free_storage(Block& b) {
    c10::StorageImpl* storage = storage_of(b.flat);
    full_bytes -= static_cast<int64_t>(storage->nbytes());
    storage->set_data_ptr_noswap(at::DataPtr(nullptr, b.flat.device()));
    storage->set_nbytes(0);
  }

  // Starts the all-gather of block b: every rank writes its pieces into a zeroed buffer and the buffers are
  // summed (the pieces are disjoint, so the sum is exact).
  void start_gather(int index, bool prefetch) {
    Block& b = blocks[index];
    if (b.state != BlockState::Released || b.numel == 0) return;
    torch::NoGradGuard no_grad;
    allocate(b);
    b.flat.zero_();
    for (size_t i : b.params) {
      const Param& p = params[i];
      if (p.end > p.begin)
        b.flat.narrow(0, p.block_offset + p.begin, p.end - p.begin).copy_(p.piece, /*non_blocking=*/true);
    }
    if (comm->world_size() > 1) {
      std::vector<at::Tensor> tensors{b.flat};
      b.pending = comm->all_reduce_sum_async(tensors, "ZeRO-3 gather of " + b.name + "'s parameters");
    }
    b.state = BlockState::InFlight;
    stats.gathers += 1;
    stats.prefetches += prefetch ? 1 : 0;
    stats.gathered_bytes += b.numel * b.flat.element_size();
  }

  void finish_gather(int index) {
    Block& b = blocks[index];
    if (b.numel == 0 || b.state == BlockState::Gathered) return;
    if (b.state == BlockState::Released) start_gather(index, false);
    if (b.pending) {
      auto pending = std::move(b.pending);
      pending->wait();
    }
    for (size_t i : b.params) {
      Param& p = params[i];
      p.param.set_data(b.flat.narrow(0, p.block_offset, p.numel).view(p.shape));
    }
    b.state = BlockState::Gathered;
  }

  void release(int index) {
    Block& b = blocks[index];
    if (held_whole || b.numel == 0 || b.state == BlockState::Released) return;
    if (b.pending) {
      // Every rank takes part in the collective, so it completes before the buffer goes.
      auto pending = std::move(b.pending);
      pending->wait();
    }
    for (size_t i : b.params) {
      Param& p = params[i];
      p.param.set_data(at::empty({0}, p.param.options().requires_grad(false)));
    }
    free_storage(b);
    b.state = BlockState::Released;
    stats.releases += 1;
  }

  // Every block released and no use live: the end of a backward, a new forward, release_all().
  void release_all() {
    for (Block& b : blocks) b.live = 0;
    open.clear();
    for (size_t i = 0; i < blocks.size(); ++i) release(static_cast<int>(i));
  }

  // One use of block `index` ended (forward or backward): released when no other use is live.
  void end_live_use(int index) {
    Block& b = blocks[index];
    b.live = std::max(0, b.live - 1);
    if (b.live == 0) release(index);
  }

  // Starts the gathers of the uses after (forward) or before (backward) traced position `position`, as many
  // blocks as fit in stage3_prefetch_bucket_size elements; a block gathered or in flight already is skipped
  // (a tied block's other use), one released since is fetched again.
  void prefetch(int position, bool forward) {
    if (!options.overlap_comm || !trace_complete || position < 0) return;
    int64_t budget = options.stage3_prefetch_bucket_size;
    const auto n = static_cast<int>(trace.size());
    for (int k = forward ? position + 1 : position - 1; k >= 0 && k < n; k += forward ? 1 : -1) {
      Block& b = blocks[trace[k]];
      if (b.state != BlockState::Released || b.numel == 0) continue;
      if (b.numel > budget) break;
      budget -= b.numel;
      start_gather(trace[k], true);
    }
  }

  // A forward use of block `index` begins: its position in the traced order (-1 when this forward left it).
  int begin_use(int index) {
    if (!trace_complete) {
      if (traced_uses[index] < blocks[index].declared_uses) {
        trace.push_back(index);
        traced_uses[index] += 1;
        cursor = trace.size();
        if (static_cast<int64_t>(trace.size()) == declared_total) trace_complete = true;
        return static_cast<int>(trace.size()) - 1;
      }
      trace_complete = true;  // more uses than the model declares: the first forward has ended
    }
    if (cursor < trace.size() && trace[cursor] == index) return static_cast<int>(cursor++);
    if (index == trace.front() && open.empty()) {
      // A new forward: whatever a backward that failed half-way left gathered goes now.
      callback_queued = false;
      release_all();
      cursor = 1;
      return 0;
    }
    return -1;
  }

  // The innermost open use of block `index` ends: its traced position (-1 when none is open).
  int end_use(int index) {
    for (auto it = open.rbegin(); it != open.rend(); ++it) {
      if (it->block != index) continue;
      const int position = it->position;
      open.erase(std::next(it).base());
      return position;
    }
    return -1;
  }

  // No parameters, and the model's hook blocks (its uses in forward order, a block named once per use), none
  // gathered.
  void reset_blocks(const std::vector<std::string>& uses) {
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
  void add_params(torch::nn::Module& model, const FlatLayout& layout,
                  const std::vector<ParamSegment>& segments) {
    const auto named = model.named_parameters(/*recurse=*/true);
    std::map<int64_t, const ParamSegment*> mine;
    for (const ParamSegment& s : segments) mine[s.param] = &s;
    for (size_t i = 0; i < layout.entries.size(); ++i) {
      const FlatEntry& entry = layout.entries[i];
      const at::Tensor* found = named.find(entry.name);
      BERTH_CHECK(found != nullptr, "ZeRO stage 3: the layout names parameter ", entry.name,
                  " but the model has none by that name. Fix: build the layout from this model's parameters");
      BERTH_CHECK(found->numel() == entry.numel, "ZeRO stage 3: parameter ", entry.name, " has ",
                  found->numel(), " elements but the layout says ", entry.numel,
                  ". Fix: build the layout from this model");
      Param p;
      p.name = entry.name;
      p.param = *found;
      p.shape = found->sizes().vec();
      p.numel = entry.numel;
      p.persistent = entry.numel <= options.stage3_param_persistence_threshold;
      if (!p.persistent) {
        add_to_block(p);
        const auto it = mine.find(static_cast<int64_t>(i));
        if (it != mine.end())
          keep_piece(p, it->second->begin, it->second->end);
        else
          keep_piece(p, 0, 0);
      }
      params.push_back(std::move(p));
    }
  }

  // A partitioned parameter into its block's flat buffer (after the block's earlier parameters).
  void add_to_block(Param& p) {
    const std::string block = block_of(block_names, p.name);
    BERTH_CHECK(!block.empty() && block_index.count(block), "ZeRO stage 3: parameter ", p.name,
                " belongs to no block with layer hooks (", describe_blocks(block_names),
                "). Fix: raise stage3_param_persistence_threshold to at least ", p.numel,
                " to keep it whole");
    p.block = block_index.at(block);
    Block& b = blocks[p.block];
    if (b.params.empty()) {
      b.flat = at::empty({0}, p.param.options().requires_grad(false));
    } else {
      const at::Tensor& first = params[b.params.front()].param;
      BERTH_CHECK(first.scalar_type() == p.param.scalar_type() && first.device() == p.param.device(),
                  "ZeRO stage 3: the parameters of ", block, " must share one dtype and device; ", p.name,
                  " is ", p.param.dtype(), " on ", p.param.device(), ", ", params[b.params.front()].name,
                  " is ", first.dtype(), " on ", first.device());
    }
    p.block_offset = b.numel;
    b.numel += p.numel;
    b.params.push_back(params.size());
  }

  // This rank's piece [begin, end) of a partitioned parameter (empty where it owns none), copied out: to the
  // CPU with offload_param.
  void keep_piece(Param& p, int64_t begin, int64_t end) {
    p.begin = begin;
    p.end = end;
    torch::NoGradGuard no_grad;
    at::Tensor piece = p.param.detach().reshape({-1}).slice(0, p.begin, p.end);
    if (options.offload_param.enabled()) {
      at::TensorOptions cpu = piece.options().device(at::kCPU);
      const bool pin = options.offload_param.pin_memory && p.param.is_cuda();
      p.piece = at::empty({p.end - p.begin}, cpu.pinned_memory(pin));
      p.piece.copy_(piece);
    } else {
      p.piece = piece.clone();
    }
  }

  // Every flat buffer starts without storage; the parameters point at empty tensors until gathered.
  void release_new_blocks() {
    for (Block& b : blocks) {
      if (b.numel == 0) continue;
      b.flat = at::empty({b.numel}, b.flat.options());
      full_bytes += b.flat.storage().nbytes();
      b.state = BlockState::Gathered;
    }
    for (size_t i = 0; i < blocks.size(); ++i) release(static_cast<int>(i));
    stats = {};
  }

  // Releases whatever is still gathered when backward ends (the embeddings, whose input needs no gradient,
  // and prefetched blocks backward never reached).
  void queue_final_release(const std::shared_ptr<Core>& self) {
    if (callback_queued) return;
    callback_queued = true;
    std::weak_ptr<Core> weak = self;
    torch::autograd::Engine::get_default_engine().queue_callback([weak] {
      auto core = weak.lock();
      if (!core) return;
      std::lock_guard<std::recursive_mutex> lock(core->mutex);
      core->callback_queued = false;
      if (!core->attached) return;
      core->release_all();
      core->cursor = core->trace.size();  // the forward is over, even one that failed half-way
    });
  }
};

// Autograd wrappers find their Core by id: a custom Function's context keeps IValues only.
std::mutex registry_mutex;
std::unordered_map<int64_t, std::weak_ptr<Core>> registry;
int64_t next_core_id = 1;

std::shared_ptr<Core> find_core(int64_t id) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry.find(id);
  return it == registry.end() ? nullptr : it->second.lock();
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Identity forward on a use's output; backward gathers the block's parameters (that use's backward comes
// next) and prefetches the uses traced before it.
struct GatherBeforeBackward : torch::autograd::Function<GatherBeforeBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t core_id, int64_t block,
                            int64_t position) {
    ctx->saved_data["core"] = core_id;
    ctx->saved_data["block"] = block;
    ctx->saved_data["position"] = position;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (auto core = find_core(ctx->saved_data["core"].toInt())) {
      std::lock_guard<std::recursive_mutex> lock(core->mutex);
      if (core->attached) {
        const int block = static_cast<int>(ctx->saved_data["block"].toInt());
        core->trace_complete = true;
        core->queue_final_release(core);
        core->blocks[block].live += 1;
        core->finish_gather(block);
        core->prefetch(static_cast<int>(ctx->saved_data["position"].toInt()), /*forward=*/false);
      }
    }
    return {grads[0], at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Identity forward on a use's input; its backward runs once the gradient w.r.t. that input is complete, i.e.
// the use's backward is over: the block's parameters are released unless another use is live. A tied
// parameter's gradient is not summed yet then (autograd accumulates it once, after its last use's backward,
// with the block gathered again for that use), so it reaches the gradient hooks whole.
struct ReleaseAfterBackward : torch::autograd::Function<ReleaseAfterBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t core_id, int64_t block) {
    ctx->saved_data["core"] = core_id;
    ctx->saved_data["block"] = block;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (auto core = find_core(ctx->saved_data["core"].toInt())) {
      std::lock_guard<std::recursive_mutex> lock(core->mutex);
      if (core->attached) core->end_live_use(static_cast<int>(ctx->saved_data["block"].toInt()));
    }
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

class Zero3Hooks : public LayerHooks {
 public:
  Zero3Hooks(std::shared_ptr<Core> core, int64_t id) : core_(std::move(core)), id_(id) {}

  // A use of block `name` begins: gathered (or already, by a prefetch or a live use), the next uses
  // prefetched.
  at::Tensor before_forward(const std::string& name, const at::Tensor& input) override {
    std::lock_guard<std::recursive_mutex> lock(core_->mutex);
    core_->check_attached();
    const int block = core_->index_of(name);
    const int position = core_->begin_use(block);
    core_->finish_gather(block);
    core_->blocks[block].live += 1;
    core_->open.push_back({block, position});
    core_->prefetch(position, /*forward=*/true);
    if (at::GradMode::is_enabled() && input.requires_grad())
      return ReleaseAfterBackward::apply(input, id_, static_cast<int64_t>(block));
    return input;
  }

  // The use ends: released unless another use of the block is live (a use nested in it).
  at::Tensor after_forward(const std::string& name, const at::Tensor& output) override {
    std::lock_guard<std::recursive_mutex> lock(core_->mutex);
    core_->check_attached();
    const int block = core_->index_of(name);
    const int position = core_->end_use(block);
    at::Tensor result = output;
    if (at::GradMode::is_enabled() && output.requires_grad())
      result = GatherBeforeBackward::apply(output, id_, static_cast<int64_t>(block), position);
    core_->end_live_use(block);
    // Without autograd nothing comes back for prefetched blocks the forward skipped.
    if (!at::GradMode::is_enabled() && core_->trace_complete && core_->open.empty() &&
        core_->cursor == core_->trace.size())
      core_->release_all();
    return result;
  }

 private:
  std::shared_ptr<Core> core_;
  int64_t id_;
};

}  // namespace

struct PartitionedParameters::Impl {
  std::shared_ptr<Core> core = std::make_shared<Core>();
  int64_t id = 0;
  // Owned, so that a sync destroyed after the code that built the model (a ProcessContext outliving its
  // Trainer) can still unhook it.
  std::shared_ptr<LayeredModel> model;
  std::vector<ParamSegment> segments;
  std::vector<at::Tensor> owned;  // per segment
};

PartitionedParameters::PartitionedParameters(std::shared_ptr<Communicator> comm, ZeroOptions options)
    : impl_(std::make_unique<Impl>()) {
  BERTH_BUG(comm != nullptr, "PartitionedParameters needs a communicator");
  impl_->core->comm = std::move(comm);
  impl_->core->options = std::move(options);
  std::lock_guard<std::mutex> lock(registry_mutex);
  impl_->id = next_core_id++;
  registry[impl_->id] = impl_->core;
}

PartitionedParameters::~PartitionedParameters() {
  {
    std::lock_guard<std::recursive_mutex> lock(impl_->core->mutex);
    // No collectives here (other ranks may not be destroying theirs): a model still partitioned fails with
    // a clear error in its next forward.
    impl_->core->attached = false;
  }
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry.erase(impl_->id);
}

void PartitionedParameters::partition(torch::nn::Module& model, const FlatLayout& layout) {
  Core& core = *impl_->core;
  std::lock_guard<std::recursive_mutex> lock(core.mutex);
  BERTH_CHECK(!core.attached,
              "ZeRO stage 3: partition() called twice. Fix: unpartition() first, then partition again");
  BERTH_CHECK(core.options.stage == 3, "PartitionedParameters is ZeRO stage 3's; the options say stage ",
              core.options.stage,
              ". Fix: set zero_optimization.stage to 3, or use stage 1 or 2's gradient sync");
  core.held_whole = false;
  auto* layered = dynamic_cast<LayeredModel*>(&model);
  BERTH_CHECK(
      layered != nullptr, "ZeRO stage 3 gathers each block's parameters through layer hooks, which ",
      "berth's task models (berth::TaskModel, e.g. BertForSequenceClassification) run; this model is a ",
      model.name(),
      ", which has none. Fix: use ZeRO stage 2 (or 1) for this model, or implement berth::LayeredModel "
      "for it (see berth/model/layer_hooks.h)");

  core.reset_blocks(layered->hook_blocks());
  impl_->segments = per_parameter_partition(layout, core.comm->rank(), core.comm->world_size(),
                                            core.options.stage3_param_persistence_threshold);
  core.add_params(model, layout, impl_->segments);
  core.release_new_blocks();

  impl_->owned.clear();
  for (const ParamSegment& s : impl_->segments) {
    const Param& p = core.params[s.param];
    impl_->owned.push_back(p.persistent ? p.param.detach().view({-1}) : p.piece);
  }
  core.attached = true;
  try {
    impl_->model = std::dynamic_pointer_cast<LayeredModel>(model.shared_from_this());
  } catch (const std::bad_weak_ptr&) {  // a module not held by a shared_ptr: its owner keeps it alive
    impl_->model = std::shared_ptr<LayeredModel>(layered, [](auto*) {});
  }
  layered->set_layer_hooks(std::make_shared<Zero3Hooks>(impl_->core, impl_->id));
}

void PartitionedParameters::unpartition() {
  Core& core = *impl_->core;
  std::lock_guard<std::recursive_mutex> lock(core.mutex);
  if (!core.attached) return;
  gather_all();
  // The parameters keep their gathered data (views of the blocks' buffers, which stay allocated).
  impl_->model->set_layer_hooks(nullptr);
  impl_->model = nullptr;
  core.attached = false;
  core.params.clear();
  core.blocks.clear();
  core.block_names.clear();
  core.block_index.clear();
  core.full_bytes = 0;
  impl_->owned.clear();
  impl_->segments.clear();
}

void PartitionedParameters::gather_all() {
  Core& core = *impl_->core;
  std::lock_guard<std::recursive_mutex> lock(core.mutex);
  core.check_attached();
  for (size_t i = 0; i < core.blocks.size(); ++i) core.start_gather(static_cast<int>(i), false);
  for (size_t i = 0; i < core.blocks.size(); ++i) core.finish_gather(static_cast<int>(i));
  core.held_whole = true;
}

void PartitionedParameters::release_all() {
  Core& core = *impl_->core;
  std::lock_guard<std::recursive_mutex> lock(core.mutex);
  core.check_attached();
  core.held_whole = false;
  core.release_all();
}

const std::vector<ParamSegment>& PartitionedParameters::owned_segments() const { return impl_->segments; }

at::Tensor PartitionedParameters::owned_piece(size_t i) const {
  BERTH_BUG(i < impl_->owned.size(), "owned_piece(", i, ") of ", impl_->owned.size(), " segments");
  return impl_->owned[i];
}

void PartitionedParameters::after_step() {
  Core& core = *impl_->core;
  std::lock_guard<std::recursive_mutex> lock(core.mutex);
  core.check_attached();
  if (core.comm->world_size() == 1) return;
  std::vector<at::Tensor> persistent;
  for (Param& p : core.params)
    if (p.persistent) persistent.push_back(p.param.detach());
  if (persistent.empty()) return;
  torch::NoGradGuard no_grad;
  core.comm->broadcast(persistent, 0, "ZeRO-3 broadcast of the persistent parameters after the step");
}

int64_t PartitionedParameters::held_parameter_bytes() const {
  const Core& core = *impl_->core;
  int64_t bytes = 0;
  for (const Param& p : core.params)
    bytes +=
        p.persistent ? p.param.numel() * p.param.element_size() : p.piece.numel() * p.piece.element_size();
  return bytes;
}

Zero3Stats PartitionedParameters::stats() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->core->mutex);
  return impl_->core->stats;
}

}  // namespace berth::dist
