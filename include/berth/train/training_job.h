// A whole training job from its arguments, as `berth train` runs it: the run plan, the tokenizer, the data,
// a model_init (a pretrained model or a preset), early stopping, one training or a hyperparameter search,
// the final evaluation, test predictions and the report. The CLI parses flags and calls run_training_job; a
// Python front end calls the same entry.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "berth/data/dataset_source.h"
#include "berth/device/dist_env.h"
#include "berth/model/shared_parameters.h"
#include "berth/tokenizer/tokenizer.h"
#include "berth/train/question_answering_job.h"
#include "berth/train/trainer.h"
#include "berth/train/training_arguments.h"

namespace berth::train {

struct TrainingJobOptions {
  std::string model;         // an HF model directory to fine-tune, or...
  std::string model_preset;  // ...a preset trained from scratch (bert-tiny ... bert-base, ...)
  std::string task;          // a ModelTask name; empty: the checkpoint's architectures, else classification
  std::string tokenizer;     // tokenizer directory; empty: the model directory
  std::string config_overrides;  // preset only: "num_hidden_layers=2,hidden_dropout_prob=0.2"
  // A front end's own model (the Python Trainer's model=torch.nn.Module): `model` holds its config.json
  // alone, and the model trained is built from it with these tensors as its parameters (shared, not copied,
  // so the caller's model is the one trained); `shared_source` names it in messages.
  SharedTensors shared_tensors;
  std::string shared_source;
  // causal-lm / masked-lm: pack the texts into blocks of this many tokens (0: one text a row)
  size_t block_size = 0;
  double mlm_probability = 0.15;  // masked-lm: the share of tokens masked (run_mlm.py's flag)
  bool whole_word_mask = false;   // masked-lm: mask whole words (HF's whole_word_mask)
  data::DatasetSource data;
  QuestionAnsweringOptions question_answering;  // --task question-answering: columns, windows, answers
  TrainingArguments args;
  int early_stopping_patience = 0;  // 0: off
  double early_stopping_threshold = 0.0;
  std::string hp_space;  // a search-space JSON file: a search instead of one training
  size_t n_trials = 10;
  std::string hp_method = "random";  // random or grid
  std::string direction = "maximize";
  std::string hp_objective;  // empty: metric_for_best_model, else eval_loss
  // A front end's own metrics (added to the built-in ones; question answering keeps its own) and callbacks
  // (after early stopping's). The CLI sets neither.
  ComputeMetrics compute_metrics;
  std::vector<std::shared_ptr<TrainerCallback>> callbacks;
};

// A job built as `berth train` builds it, ready for train(), evaluate(), predict() and a search: what the
// Python Trainer drives step by step.
struct PreparedTrainingJob {
  TrainingJobOptions options;  // with args as the run resolved them (device, max_length, resume)
  std::shared_ptr<RunPlan> plan;
  std::optional<tokenizer::Tokenizer> tokenizer;
  data::LoadedDatasets text;  // the splits as read (labels, description)
  std::shared_ptr<data::TokenizedDataset> train, eval, test;
  std::unique_ptr<Trainer> trainer;
  std::ostream* out = nullptr;  // the console on rank 0, a null stream elsewhere
};

// Everything run_training_job does before it trains: the plan, tokenizer, data, model_init and Trainer.
PreparedTrainingJob prepare_training_job(TrainingJobOptions options, std::ostream& out,
                                         const EnvLookup& env = process_env());
// A file of texts (JSONL/CSV/TSV, the job's columns) encoded as the job encodes its splits, with its labels
// when the file has them: what predict() and evaluate() take for a dataset given later. Sequence
// classification and language models only.
std::shared_ptr<data::TokenizedDataset> encode_job_file(const PreparedTrainingJob& job,
                                                        const std::string& path);
// Throws berth::Error, with the fix, for a job a hyperparameter search cannot run: one whose model is shared
// (TrainingJobOptions::shared_tensors), which every trial would continue training.
void check_search_allowed(const TrainingJobOptions& options);
// One training then the eval and test metrics and the report, as `berth train` ends (or the search).
void finish_training_job(PreparedTrainingJob& job);

// Runs the job in this process (under a launcher: as its rank; rank 0 alone writes to `out`). Throws
// berth::Error for bad input, with the fix.
void run_training_job(TrainingJobOptions options, std::ostream& out, const EnvLookup& env = process_env());

}  // namespace berth::train
