// Checkpoint I/O for any family: model.safetensors (single or sharded) into a module by HF's names, with HF's
// prefix, legacy-name, tied-weight and missing/unexpected/mismatched rules; and back out as HF writes it.
#pragma once

#include "berth/model/pretrained.h"
#include "berth/model/pretrained_config.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace berth {

// How a family's task model names its tensors in a checkpoint.
struct CheckpointLayout {
  std::string architecture;  // HF's class name ("GPT2LMHeadModel"): messages and config.json's architectures
  // HF's base_model_prefix plus a dot ("bert.", "transformer.", "model."): a checkpoint of the bare base
  // model loads under it, and a head checkpoint loads into the bare base model without it.
  std::string base_prefix;
  // Names a checkpoint may hold that the module has no tensor for, dropped without a report: weights tied to
  // another ("lm_head.weight" when tie_word_embeddings) and buffers HF no longer saves.
  std::vector<std::string> ignored;
  // The task head's tensor names start with one of these ("classifier.", "score."): a shape mismatch there
  // is a different label count, and the error says how to start a new head.
  std::vector<std::string> head_prefixes;
  // HF's _init_weights over the whole module, for what the checkpoint does not provide (nullopt seed: torch's
  // global generator).
  std::function<void(torch::nn::Module&, std::optional<uint64_t> seed)> init;
  // A legacy checkpoint name -> today's (TensorFlow-era LayerNorm gamma/beta are always renamed).
  std::function<std::string(const std::string&)> rename;
};

// Throws berth::Error unless dir is a directory holding config.json and options.dtype is a floating type: the
// checks every from_pretrained makes before reading anything.
void check_model_dir(const std::string& dir, const PretrainedOptions& options);

// Loads dir's model.safetensors (or model.safetensors.index.json shards) into `module` (already built from
// config.json and converted to options.dtype). Throws berth::Error for a missing file, a pytorch_model.bin
// only directory (with the conversion command) and shape mismatches (unless
// options.ignore_mismatched_sizes and only the head's tensors differ); calls layout.init first when anything
// is missing or mismatched.
LoadReport load_weights(torch::nn::Module& module, const std::string& dir, const CheckpointLayout& layout,
                        const PretrainedOptions& options, int64_t num_labels);

// Writes config.json (architectures = layout.architecture, dtype = the parameters' dtype) and
// model.safetensors (metadata {"format": "pt"}) into dir, creating it; each file goes to a temporary name
// first. Tensors sharing memory are refused (safetensors would store two unrelated copies): a tied weight
// must not be a registered tensor of its own.
void save_weights(const torch::nn::Module& module, PretrainedConfig config, const CheckpointLayout& layout,
                  const std::string& dir);
// The model.safetensors half of save_weights; returns the parameters' dtype name ("float32").
std::string save_module_tensors(const torch::nn::Module& module, const std::string& dir);

}  // namespace berth
