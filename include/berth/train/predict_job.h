// Predicting with a trained model directory over a JSONL file, as `berth predict` does, for every task:
// labels (classification, regression), continuations (causal LM), answer spans (question answering) or
// labelled words (token classification), one JSON line per input. The CLI parses flags and calls
// run_predict_job; a Python front end calls the same entry.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

#include "berth/model/predictor.h"
#include "berth/train/question_answering_job.h"

namespace berth::train {

struct PredictJobOptions {
  std::string model;           // the model directory: config.json, model.safetensors, the tokenizer
  std::string input;           // JSONL: {"text", "text_pair"?}, {"question", "context"} or {"tokens"}
  std::string output;          // the JSONL written (atomically); empty: the `out` stream
  PredictorOptions predictor;  // device, batch size, max length, generation (causal LMs)
  std::string task;            // a ModelTask name; empty: the checkpoint's architectures
  QuestionAnsweringOptions question_answering;  // question-answering: columns, windows, answers
};

// Writes one JSON line per input to options.output, else to `out`; `log` gets the model's load warnings
// ("warning: ...") and, with an output file, "predict: N predictions|answers|rows -> FILE". Returns the
// number of lines. A bad options.output is refused before the model loads. Throws berth::Error for bad
// input, with the fix.
size_t run_predict_job(const PredictJobOptions& options, std::ostream& out, std::ostream& log);

}  // namespace berth::train
