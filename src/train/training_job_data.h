// The training job's data: each task's loading (its recipe's) and encoding, and --block-size packing
// (training_job.cpp's data half).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include "berth/data/dataset_source.h"
#include "berth/data/encode_text_dataset.h"
#include "berth/model/model_task.h"
#include "berth/model/pretrained_config.h"
#include "berth/tasks/task_recipe.h"
#include "berth/tokenizer/tokenizer.h"
#include "berth/train/training_job.h"

namespace berth::train {

// The text as loaded (labels, description), each split tokenized, and the task's own metrics.
using EncodedData = tasks::TaskData;

// What a job reads for `task` (its recipe's load_training_data): the labeled text of a sequence classifier,
// a language model's text, or a token classifier's and a question answerer's splits already encoded.
EncodedData load_job_data(const TrainingJobOptions& options, const tokenizer::Tokenizer& tokenizer,
                          const std::optional<PretrainedConfig>& checkpoint, ModelTask task);

// Each split of `text` tokenized, the time it took printed to `out`.
EncodedData encode_data(data::LoadedDatasets text, const tokenizer::Tokenizer& tokenizer,
                        const data::EncodeTextOptions& encoding, std::ostream& out);

// run_clm.py's group_texts over every split: full blocks of block_size tokens, no padding.
void pack_data(EncodedData& data, ModelTask task, size_t block_size, std::ostream& out);

}  // namespace berth::train
