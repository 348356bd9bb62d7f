// The options of `berth eval` and `berth predict` (run_eval_job, run_predict_job), which the task recipes
// read to choose and encode the data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "berth/data/dataset_source.h"
#include "berth/data/mask_tokens.h"
#include "berth/model/predictor.h"
#include "berth/tasks/question_answering_split.h"

namespace berth::tasks {

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

struct PredictJobOptions {
  std::string model;           // the model directory: config.json, model.safetensors, the tokenizer
  std::string input;           // JSONL: {"text", "text_pair"?}, {"question", "context"} or {"tokens"}
  std::string output;          // the JSONL written (atomically); empty: the `out` stream
  PredictorOptions predictor;  // device, batch size, max length, generation (causal LMs)
  std::string task;            // a ModelTask name; empty: the checkpoint's architectures
  QuestionAnsweringOptions question_answering;  // question-answering: columns, windows, answers
};

}  // namespace berth::tasks
