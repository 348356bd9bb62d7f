// LayerHooks: code that runs around each block of a model's forward (ZeRO-3 gathers a block's parameters
// just before it runs and releases them after, in forward and in backward).
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace berth {

// A block is a module whose parameters are used together: "bert.embeddings", "bert.encoder.layer.<i>",
// "bert.pooler", "classifier" (its module path, the prefix of its parameters' names). The model calls
// before_forward(block, input) just before each use of the block and after_forward(block, output) just after,
// and uses the tensors they return in place of input and output, so a hook can wrap them in autograd
// functions whose backward marks "this use's backward is about to start" (after_forward's wrapper) and
// "this use's backward has finished" (before_forward's wrapper, when input requires grad).
//
// A block used more than once per forward says so by calling the hooks again, naming the same block: a
// decoder tied to the input embeddings (tie_word_embeddings) runs as a second use of the embeddings' block
// ("model.embed_tokens" around Llama's tied lm_head product, "roberta.embeddings" around a masked-LM head's
// decoder). Uses may nest (the decoder's use inside the head block that holds its bias): after_forward ends
// the innermost open use of that block. The tied weight stays one parameter under its HF name.
class LayerHooks {
 public:
  virtual ~LayerHooks() = default;
  virtual at::Tensor before_forward(const std::string& block, const at::Tensor& input) = 0;
  virtual at::Tensor after_forward(const std::string& block, const at::Tensor& output) = 0;
};

// A model whose forward runs in named blocks and calls LayerHooks around each use. ZeRO stage 3 asks only
// this of a model: every parameter it partitions is named `<block>.<rest>` for one of hook_blocks().
class LayeredModel {
 public:
  virtual ~LayeredModel() = default;
  // The block uses of one forward in the order their before_forward calls come, e.g. "bert.embeddings",
  // "bert.encoder.layer.0", ..., "classifier"; a block used again appears again where its later use begins
  // (a tied Llama: "model.embed_tokens", "model.layers.0", ..., "model.norm", "model.embed_tokens").
  virtual std::vector<std::string> hook_blocks() const = 0;
  // Installs `hooks` around every block's forward; nullptr removes them (forward is then unchanged).
  virtual void set_layer_hooks(std::shared_ptr<LayerHooks> hooks) = 0;
};

// The block of hook_blocks() that holds parameter `name` (the longest block that is a dotted prefix of it),
// or "" when none does: "bert.encoder.layer.3.attention.self.query.weight" -> "bert.encoder.layer.3".
std::string block_of(const std::vector<std::string>& blocks, const std::string& name);

// Runs fn(input) as the hook block `block` when hooks are installed, else plainly.
template <typename Fn>
at::Tensor run_hook_block(LayerHooks* hooks, const std::string& block, const at::Tensor& input,
                          const Fn& fn) {
  if (hooks == nullptr) return fn(input);
  return hooks->after_forward(block, fn(hooks->before_forward(block, input)));
}

}  // namespace berth
