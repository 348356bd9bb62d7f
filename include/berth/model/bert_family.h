// The "bert" model family for AutoModel, and BERT's checkpoint names for each head.
#pragma once

#include "berth/model/auto_model.h"
#include "berth/model/checkpoint_io.h"
#include "berth/model/model_task.h"
#include "berth/model/pretrained_config.h"

namespace berth {

ModelFamily bert_family();

// Bert<Head>'s checkpoint names for `task`: prefix "bert.", the buffers older checkpoints saved ignored, the
// pooler dropped for the per-token heads, the tied decoder of a masked LM ignored, HF's init.
CheckpointLayout bert_checkpoint_layout(const PretrainedConfig& config, ModelTask task);

}  // namespace berth
