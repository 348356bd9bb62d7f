// ModelRunner: the evaluation loop a recipe runs a model through (the Trainer's predict, from train/), so
// that a task's evaluation and prediction are written once above the loop that batches, places and gathers.
#pragma once

#include <memory>
#include <string>

#include "berth/data/tokenized_dataset.h"
#include "berth/model/task_model.h"
#include "berth/tasks/prediction_output.h"
#include "berth/tokenizer/tokenizer.h"

namespace berth::tasks {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  // The model's predictions over `dataset` in dataset order (padded with the tokenizer's pad token), with
  // the task's metrics prefixed by `prefix` (and compute_metrics', when given) where the dataset is labelled.
  virtual PredictionOutput predict(std::shared_ptr<TaskModel> model, const tokenizer::Tokenizer& tokenizer,
                                   const data::TokenizedDataset& dataset,
                                   const ComputeMetrics& compute_metrics, const std::string& prefix) = 0;
};

}  // namespace berth::tasks
