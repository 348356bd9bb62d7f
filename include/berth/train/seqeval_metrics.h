// Forwarding header: seqeval_metrics moved to berth/tasks/ (the task recipes' layer); the old name stays.
#pragma once

#include "berth/tasks/seqeval_metrics.h"

namespace berth::train {
using tasks::seqeval_entities;
using tasks::seqeval_scores;
using tasks::SeqevalEntity;
using tasks::SeqevalScores;
using tasks::token_classification_metrics;
}  // namespace berth::train
