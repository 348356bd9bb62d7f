// TaskRecipe: what berth does differently for each task (sequence classification, token classification,
// question answering, masked LM, causal LM), asked of one object instead of branched on the task: the data a
// job reads, what a batch's labels are, how evaluation gathers predictions, the labels a new head is made
// for, what `berth eval` evaluates and what `berth predict` writes. task_recipe() is the one place that
// chooses by the task; scripts/check-task-switches keeps it so.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "berth/data/data_loader.h"
#include "berth/data/dataset_source.h"
#include "berth/data/encode_text_dataset.h"
#include "berth/model/model_task.h"
#include "berth/model/pretrained_config.h"
#include "berth/model/task_model.h"
#include "berth/tasks/model_runner.h"
#include "berth/tasks/prediction_output.h"
#include "berth/tasks/question_answering_split.h"
#include "berth/tasks/run_options.h"
#include "berth/tasks/task_traits.h"
#include "berth/tokenizer/tokenizer.h"

namespace berth::tasks {

// What a training job reads: its source, the tokenizer, the truncation and, when it fine-tunes one, the
// checkpoint's config (a classifier's named classes, a token classifier's labels).
struct TaskDataRequest {
  const data::DatasetSource& source;
  const tokenizer::Tokenizer& tokenizer;
  size_t max_length = 0;
  const QuestionAnsweringOptions& question_answering;
  const PretrainedConfig* checkpoint = nullptr;
};

// A job's data: the text as loaded (labels, description) and each split, already encoded where the task
// encodes as it loads (token classification, question answering); train null: the text is still to encode.
struct TaskData {
  data::LoadedDatasets text;
  std::shared_ptr<data::TokenizedDataset> train, eval, test;
  ComputeMetrics compute_metrics;  // the task's own metrics (question answering's SQuAD scores), else empty
};

// A file read after the job's data (Trainer.evaluate(FILE)): its path, the job's source (columns), the
// tokenizer, the truncation and the job's labels.
struct FileRequest {
  std::string path;
  const data::DatasetSource& source;
  const tokenizer::Tokenizer& tokenizer;
  data::EncodeTextOptions encoding;
  const data::LabelMap& labels;
};

// The labels (and a classifier's problem type) a new head is made for.
struct HeadLabels {
  std::vector<std::string> labels;
  std::optional<std::string> problem_type;
};

// What `berth eval` evaluates: a trained model's task, limits and labels, and the truncation its training
// run used (trained: its training_args.json's, when it has one).
struct EvalRequest {
  const EvalJobOptions& options;
  const TaskModelInfo& info;
  const tokenizer::Tokenizer& tokenizer;
  std::optional<data::EncodeTextOptions> trained;
};
struct EvalData {
  std::shared_ptr<const data::TokenizedDataset> dataset;
  ComputeMetrics compute_metrics;
  std::string title;  // "eval metrics (592 examples)"
};

// What `berth predict` reads: the options, the truncation the model was trained with, and the Trainer's
// evaluation loop for the tasks that predict through it (question answering's windows).
struct PredictRequest {
  const PredictJobOptions& options;
  std::optional<data::EncodeTextOptions> trained;
  ModelRunner& runner;
};

class TaskRecipe {
 public:
  virtual ~TaskRecipe() = default;
  virtual ModelTask task() const = 0;
  virtual TaskTraits traits() const = 0;

  // Data: a training job's splits.
  virtual TaskData load_training_data(const TaskDataRequest& request) const = 0;
  // A later file, encoded as the job's data is; throws berth::Error with the fix where the task cannot.
  virtual std::shared_ptr<data::TokenizedDataset> load_file(const FileRequest& request) const = 0;
  // The labels a new head is made for; nullopt: the task's head has no labels.
  virtual std::optional<HeadLabels> head_labels(const data::LoadedDatasets& data) const;
  // Throws berth::Error where the factor cannot apply (regression).
  virtual LabelSmoothing label_smoothing(const TaskModelInfo& info) const;
  // Metrics: the task's scores of a labelled evaluation's gathered predictions, unprefixed ("accuracy",
  // "f1", ...); a single-label classifier also fills `confusion` ([true][predicted]). Empty where the task
  // scores through compute_metrics (question answering) or by its loss alone (language models).
  virtual std::map<std::string, double> metrics(const EvalPrediction& prediction, const TaskModelInfo& info,
                                                std::vector<std::vector<int64_t>>* confusion) const;

  // `berth eval`: the split the options choose, encoded for the model, and the task's metrics.
  virtual EvalData load_eval_data(const EvalRequest& request) const = 0;
  // `berth predict`: one JSON line per input to options.output (atomically) or `out`; returns how many.
  virtual size_t predict(const PredictRequest& request, std::ostream& out, std::ostream& log) const = 0;
};

// The recipe of `task`.
const TaskRecipe& task_recipe(ModelTask task);

// The task a job runs: `flag` (--task) when given, else what the checkpoint's architectures say, else
// sequence classification (a model trained from a preset).
ModelTask resolve_task(const std::string& flag, const PretrainedConfig* checkpoint);

}  // namespace berth::tasks
