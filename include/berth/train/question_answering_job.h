// Forwarding header: question_answering_split moved to berth/tasks/ (the task recipes' layer); the old name
// stays.
#pragma once

#include "berth/tasks/question_answering_split.h"
#include "berth/train/question_answering_postprocess.h"

namespace berth::train {
using tasks::load_question_answering_split;
using tasks::question_answering_answers;
using tasks::question_answering_compute_metrics;
using tasks::question_answering_metrics;
using tasks::QuestionAnsweringOptions;
using tasks::QuestionAnsweringSplit;
}  // namespace berth::train
