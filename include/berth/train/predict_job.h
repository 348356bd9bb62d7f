// Predicting with a trained model directory over a JSONL file, as `berth predict` does, for every task:
// labels (classification, regression), continuations (causal LM), answer spans (question answering) or
// labelled words (token classification), one JSON line per input. The CLI parses flags and calls
// run_predict_job; a Python front end calls the same entry.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

#include "berth/tasks/run_options.h"

namespace berth::train {

using tasks::PredictJobOptions;  // berth/tasks/run_options.h

// Writes one JSON line per input to options.output, else to `out`; `log` gets the model's load warnings
// ("warning: ...") and, with an output file, "predict: N predictions|answers|rows -> FILE". Returns the
// number of lines. A bad options.output is refused before the model loads. Throws berth::Error for bad
// input, with the fix.
size_t run_predict_job(const PredictJobOptions& options, std::ostream& out, std::ostream& log);

}  // namespace berth::train
