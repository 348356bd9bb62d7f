// load_task_model: the task model an HF checkpoint directory holds, chosen from its config.json, as HF's
// AutoModelFor*.from_pretrained chooses.
#pragma once

#include "berth/model/pretrained.h"
#include "berth/model/task_model.h"

#include <memory>
#include <string>

namespace berth {

// Reads dir/config.json and its weights (see from_pretrained) into the model its model_type names, with a
// sequence-classification head. Today that is BertForSequenceClassification (model_type "bert"); another
// model_type throws berth::Error naming it and what is supported.
Pretrained<std::shared_ptr<TaskModel>> load_task_model(const std::string& dir,
                                                       const PretrainedOptions& options = {});

}  // namespace berth
