// A whole training job from its arguments, as `berth train` runs it: the run plan, the tokenizer, the data,
// a model_init (a pretrained model or a preset), early stopping, one training or a hyperparameter search,
// the final evaluation, test predictions and the report. The CLI parses flags and calls run_training_job; a
// Python front end calls the same entry.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

#include "berth/data/dataset_source.h"
#include "berth/device/dist_env.h"
#include "berth/train/question_answering_job.h"
#include "berth/train/training_arguments.h"

namespace berth::train {

struct TrainingJobOptions {
  std::string model;         // an HF model directory to fine-tune, or...
  std::string model_preset;  // ...a preset trained from scratch (bert-tiny ... bert-base, ...)
  std::string task;          // a ModelTask name; empty: the checkpoint's architectures, else classification
  std::string tokenizer;     // tokenizer directory; empty: the model directory
  std::string config_overrides;  // preset only: "num_hidden_layers=2,hidden_dropout_prob=0.2"
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
};

// Runs the job in this process (under a launcher: as its rank; rank 0 alone writes to `out`). Throws
// berth::Error for bad input, with the fix.
void run_training_job(TrainingJobOptions options, std::ostream& out, const EnvLookup& env = process_env());

}  // namespace berth::train
