// What the text tasks (sequence classification, masked and causal LMs) share: text rows read by
// data::load_datasets, encoded by encode_text_dataset, predicted by the Predictor.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <optional>

#include "berth/tasks/task_recipe.h"

namespace berth::tasks {

// A training job's text: labeled against `fixed` when given, else the training file's labels; the training
// split must be there.
TaskData load_text_training_data(data::DatasetSource source, bool labeled,
                                 const std::optional<data::LabelMap>& fixed);

// The job's source (its columns) reading request.path alone, as its test split.
data::DatasetSource file_source(const FileRequest& request, bool labeled);

// request.path as a test split, labeled with request.labels when `labeled`, encoded.
std::shared_ptr<data::TokenizedDataset> load_text_file(const FileRequest& request, bool labeled);

// The truncation `berth eval` encodes with: the training run's (request.trained), else what the model and
// its tokenizer allow; --max-length over both, within the model's positions.
data::EncodeTextOptions eval_encoding(const EvalRequest& request);

// Whether --split names the validation split.
bool validation_split(const EvalJobOptions& options);

// The split --split names, encoded with eval_encoding: labeled with the model's labels when `labeled`.
EvalData text_eval_data(const EvalRequest& request, bool labeled);

// The Predictor over {"text", "text_pair"?} lines: labels (classification, regression) or continuations
// (causal LMs), one JSON line per input.
size_t predict_texts(const PredictRequest& request, std::ostream& out, std::ostream& log);

}  // namespace berth::tasks
