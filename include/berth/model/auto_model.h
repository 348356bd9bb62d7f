// AutoModel: the one place that maps a checkpoint's config.json model_type to a model family and a task to
// its head, as HF's AutoModelFor*.from_pretrained chooses.
#pragma once

#include "berth/model/checkpoint_io.h"
#include "berth/model/model_task.h"
#include "berth/model/pretrained.h"
#include "berth/model/pretrained_config.h"
#include "berth/model/shared_parameters.h"
#include "berth/model/task_model.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace berth {

// One model family: what config.json's model_type names ("roberta" and "xlm-roberta" are two entries).
struct ModelFamily {
  std::string model_type;
  std::vector<ModelTask> tasks;  // the heads it implements
  // The task model `config` describes with `task`'s head (one of `tasks`); invalid or unsupported config
  // fields throw berth::Error naming the field (config.where) and what berth implements.
  std::function<std::shared_ptr<TaskModel>(const PretrainedConfig& config, ModelTask task,
                                           const TaskModelInit& init)>
      build;
  // Its checkpoint names for `task` (the architecture name, base-model prefix, tied names, head, init).
  std::function<CheckpointLayout(const PretrainedConfig& config, ModelTask task)> layout;
  // The longest input in tokens a model of `config` takes; unset: max_position_embeddings (or GPT-2's
  // n_positions).
  std::function<int64_t(const PretrainedConfig& config)> max_positions;
};

// Every family berth implements.
const std::vector<ModelFamily>& model_families();
// The family of `model_type`; another throws berth::Error naming it (at `where`) and listing the supported.
const ModelFamily& model_family(const std::string& model_type, const std::string& where = "model_type");

// The task a checkpoint is for: its config's first architecture with a known head, else sequence
// classification (HF's AutoModelForSequenceClassification, the seed's call).
ModelTask default_task(const PretrainedConfig& config);

// The longest input in tokens the model `config` describes takes (see ModelFamily::max_positions), without
// building it.
int64_t max_positions(const PretrainedConfig& config);

// A freshly initialised task model from a config (a preset, or a checkpoint's config without its weights).
std::shared_ptr<TaskModel> build_task_model(const PretrainedConfig& config, ModelTask task,
                                            const TaskModelInit& init = {});

// Reads dir/config.json and its weights into the family its model_type names, with `task`'s head (nullopt:
// default_task). A task the family has no head for, or a model_type berth does not implement, throws
// berth::Error naming it and what is supported.
Pretrained<std::shared_ptr<TaskModel>> load_task_model(const std::string& dir,
                                                       const PretrainedOptions& options = {},
                                                       std::optional<ModelTask> task = std::nullopt);

// The same model built from dir/config.json alone, its parameters the caller's `tensors` (shared, not copied:
// share_parameters); `source` names the caller's model in messages.
Pretrained<std::shared_ptr<TaskModel>> share_task_model(const std::string& dir, const SharedTensors& tensors,
                                                        const std::string& source,
                                                        const PretrainedOptions& options = {},
                                                        std::optional<ModelTask> task = std::nullopt);

}  // namespace berth
