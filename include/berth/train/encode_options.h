// How a fine-tuned model reads text: the truncation its training run used, so that evaluation and prediction
// feed it inputs cut the way it learned them.
#pragma once

#include <optional>
#include <string>

#include "berth/data/encode_text_dataset.h"
#include "berth/train/training_arguments.h"

namespace berth::train {

// The truncation a run's arguments ask for: max_length and truncation_keep_head.
data::EncodeTextOptions encode_options(const TrainingArguments& args);
// That of the run that trained model_dir, from its training_args.json (a Trainer's output directory has one);
// nullopt without the file. A malformed file is an error naming it.
std::optional<data::EncodeTextOptions> trained_encode_options(const std::string& model_dir);

}  // namespace berth::train
