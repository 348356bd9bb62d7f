// The training job's model: checking the model choice, the task, a preset's config, and the model_init that
// loads or builds it where the run trains (training_job.cpp's model half).
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>

#include "berth/data/dataset_source.h"
#include "berth/model/model_task.h"
#include "berth/model/pretrained_config.h"
#include "berth/tokenizer/tokenizer.h"
#include "berth/train/trainer.h"
#include "berth/train/training_job.h"

namespace berth::train {

// Exactly one of --model and --model-preset, an output folder that can be made, a search that can run, a
// tokenizer for a preset; throws berth::Error with the fix.
void check_model_choice(const TrainingJobOptions& options);
// --task, else what the checkpoint's architectures say (a preset: sequence classification).
ModelTask job_task(const TrainingJobOptions& options, const std::optional<PretrainedConfig>& checkpoint);
// A preset's config for this tokenizer and, for a classifier, these labels.
PretrainedConfig preset_config(const TrainingJobOptions& options, const tokenizer::Tokenizer& tokenizer,
                               const data::LoadedDatasets& data, ModelTask task);
// berth's own model_init: the preset built, or the checkpoint loaded (or shared) with a head for the data's
// labels, placed on `device`.
ModelInit make_model_init(const TrainingJobOptions& options, const std::optional<PretrainedConfig>& preset,
                          ModelTask task, const data::LoadedDatasets& data, c10::Device device);
// The model's shape before the data is read: the checkpoint's config.json, or the preset's with the
// overrides (its vocabulary and labels come later and change neither the hidden size nor the positions).
PretrainedConfig job_model_shape(const TrainingJobOptions& options);
// The hidden size a DeepSpeed config's "auto" bucket sizes are filled from (HF reads it off the model's
// config), before the plan is resolved.
std::optional<int64_t> job_hidden_size(const TrainingJobOptions& options);

}  // namespace berth::train
