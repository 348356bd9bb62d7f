// encoder_family: the ModelFamily of an encoder with all four heads, from what its checkpoints name
// differently (class prefix, base prefix, dropped names, head prefixes).
#pragma once

#include "berth/model/auto_model.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace berth {

struct EncoderNames {
  std::string model_type;    // config.json's ("roberta")
  std::string class_prefix;  // HF's class names are class_prefix + head_suffix ("Roberta" + "ForMaskedLM")
  std::string base_prefix;   // HF's base_model_prefix plus a dot ("roberta.")
  // Names a checkpoint may hold that the model has no tensor for: non-persistent buffers older checkpoints
  // saved, and the output layer tied to the word embeddings.
  std::vector<std::string> ignored;
  std::vector<std::string> head_prefixes;  // every head's module names, each with a trailing dot
};

// HF's _init_weights of a family whose modules BERT's rule (init_encoder_weights) does not cover.
using EncoderInit = std::function<void(const PretrainedConfig& config, torch::nn::Module& module,
                                       std::optional<uint64_t> seed)>;

// The family's model for a config and task, given the layout encoder_family made for them.
using EncoderBuilder =
    std::function<std::shared_ptr<TaskModel>(const PretrainedConfig& config, ModelTask task,
                                             const CheckpointLayout& layout, const TaskModelInit& init)>;

// Sequence classification, token classification, masked LM and question answering; HF's _init_weights
// (`init`, else init_encoder_weights at the config's initializer_range).
ModelFamily encoder_family(EncoderNames names, EncoderBuilder build, EncoderInit init = nullptr);

}  // namespace berth
