// Evaluating a trained model directory, as `berth eval` does: the model's task decides the data (texts,
// words and tags, or SQuAD-style questions), the Trainer's predict gives the metrics. The CLI parses flags
// and calls run_eval_job; a Python front end calls the same entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>

#include "berth/data/dataset_source.h"
#include "berth/data/mask_tokens.h"
#include "berth/train/question_answering_job.h"

namespace berth::train {

struct EvalJobOptions {
  std::string model;                // the trained model directory (berth train's output)
  data::DatasetSource data;         // --data spamassassin, or --eval / --test files and their columns
  std::string split = "test";       // test, validation (eval) or train: which of the sources is evaluated
  size_t batch_size = 32;           // examples per forward pass
  size_t max_length = 0;            // 0: the length the model was trained at, else the model's limit
  std::string device = "auto";      // auto, cpu, cuda or cuda:N
  bool bf16 = false;                // forward under bf16 autocast (AMX / AVX512_BF16 matmuls on the CPU)
  std::string output;               // also write the metrics as JSON here (empty: not written)
  std::string task;                 // empty: the checkpoint's architectures
  data::MaskTokensOptions masking;  // masked-lm: which tokens are masked
  int64_t seed = 42;                // masked-lm: the masks' seed (TrainingArguments' seed)
  QuestionAnsweringOptions question_answering;  // question-answering: columns, windows, answers
};

// Evaluates options.model on the chosen split; prints the metrics (and a classifier's confusion matrix) to
// `out`, writes them to options.output as JSON when set, and returns them ("eval_loss", "eval_accuracy",
// ...). Throws berth::Error for bad input, with the fix.
std::map<std::string, double> run_eval_job(const EvalJobOptions& options, std::ostream& out);

}  // namespace berth::train
