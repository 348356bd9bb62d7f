// Forwarding header: question_answering_postprocess moved to berth/tasks/ (the task recipes' layer); the old
// name stays.
#pragma once

#include "berth/tasks/question_answering_postprocess.h"

namespace berth::train {
using tasks::postprocess_qa_predictions;
using tasks::QuestionAnsweringAnswer;
using tasks::QuestionAnsweringPostprocessOptions;
}  // namespace berth::train
