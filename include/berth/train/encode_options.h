// How a fine-tuned model reads text: the truncation its training run used, so that evaluation and prediction
// feed it inputs cut the way it learned them.
#pragma once

#include <optional>
#include <string>

#include "berth/data/encode_text_dataset.h"
#include "berth/tasks/input_limit.h"
#include "berth/train/training_arguments.h"

namespace berth::train {

// The truncation a run's arguments ask for: max_length (which must be set: resolve_max_length) and
// truncation_keep_head.
data::EncodeTextOptions encode_options(const TrainingArguments& args);
// That of the run that trained model_dir, from its training_args.json (a Trainer's output directory has one);
// nullopt without the file, or when it sets no max_length (HF's own training_args.json). A malformed file is
// an error naming it.
std::optional<data::EncodeTextOptions> trained_encode_options(const std::string& model_dir);

using tasks::model_input_limit;  // berth/tasks/input_limit.h

// args.max_length when given, which must fit `max_positions` (else berth::Error with the fix); unset, it
// becomes model_input_limit(max_positions, model_max_length), as HF's scripts cap their lengths to the
// tokenizer's. Validates args again (truncation_keep_head against the length).
void resolve_max_length(TrainingArguments& args, int64_t max_positions,
                        std::optional<size_t> model_max_length);

}  // namespace berth::train
