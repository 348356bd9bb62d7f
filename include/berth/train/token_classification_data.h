// Forwarding header: token_classification_data moved to berth/tasks/ (the task recipes' layer); the old name
// stays.
#pragma once

#include "berth/tasks/token_classification_data.h"

namespace berth::train {
using tasks::checkpoint_token_labels;
using tasks::load_token_classification_data;
using tasks::tags_column;
using tasks::TokenClassificationData;
using tasks::tokens_column;
}  // namespace berth::train
