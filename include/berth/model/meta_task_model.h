// A task model built on the meta device: every parameter's name and shape, no memory for values, so
// planning tools (berth estimate-memory) can count a model of any size a config describes.
#pragma once

#include "berth/model/model_task.h"
#include "berth/model/pretrained_config.h"
#include "berth/model/task_model.h"

#include <cstdint>
#include <memory>

namespace berth {

// The family and head `config` and `task` choose (as build_task_model), with every tensor on the meta
// device. Its forward cannot run; named_parameters, numel and hook_blocks can.
std::shared_ptr<TaskModel> build_meta_task_model(const PretrainedConfig& config, ModelTask task);

// What ZeRO's accounting needs of a model: its parameter count (a tied weight once) and the largest hook
// block (what stage 3 gathers at once).
struct ParameterCounts {
  int64_t total = 0;
  int64_t largest_block = 0;
};
ParameterCounts count_parameters(TaskModel& model);

}  // namespace berth
