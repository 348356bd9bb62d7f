// The question-answering flags `berth train`, `berth eval` and `berth predict` share (run_qa.py's names):
// columns, windows and the answers' postprocessing.
#pragma once

#include <CLI/CLI.hpp>

#include "berth/train/question_answering_job.h"

namespace berth::cli {

// training: also the columns of the answers (eval and predict read them where they exist).
void add_question_answering_flags(CLI::App& command, train::QuestionAnsweringOptions& options);

}  // namespace berth::cli
