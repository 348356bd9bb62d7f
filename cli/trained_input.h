// How a fine-tuned model reads text: the truncation its `berth train` run used, so that `berth eval` and
// `berth predict` feed it inputs cut the way it learned them.
#pragma once

#include <optional>
#include <string>

#include "berth/data/encode_text_dataset.h"
#include "berth/train/training_arguments.h"

namespace berth::cli {

// The truncation a run's arguments ask for: max_length and truncation_keep_head.
data::EncodeTextOptions encode_options(const train::TrainingArguments& args);

// That of the run that trained model_dir, from its training_args.json (the output directory of `berth
// train` has one); nullopt without the file. A malformed file is an error naming it.
std::optional<data::EncodeTextOptions> trained_encode_options(const std::string& model_dir);

}  // namespace berth::cli
