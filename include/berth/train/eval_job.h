// Evaluating a trained model directory, as `berth eval` does: the model's task decides the data (texts,
// words and tags, or SQuAD-style questions), the Trainer's predict gives the metrics. The CLI parses flags
// and calls run_eval_job; a Python front end calls the same entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>

#include "berth/tasks/run_options.h"

namespace berth::train {

using tasks::EvalJobOptions;  // berth/tasks/run_options.h

// Evaluates options.model on the chosen split; prints the metrics (and a classifier's confusion matrix) to
// `out`, writes them to options.output as JSON when set, and returns them ("eval_loss", "eval_accuracy",
// ...). Throws berth::Error for bad input, with the fix.
std::map<std::string, double> run_eval_job(const EvalJobOptions& options, std::ostream& out);

}  // namespace berth::train
