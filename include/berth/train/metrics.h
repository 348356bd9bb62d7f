// Forwarding header: metrics moved to berth/tasks/ (the task recipes' layer); the old name stays.
#pragma once

#include "berth/tasks/metrics.h"

namespace berth::train {
using tasks::classification_metrics;
using tasks::kIgnoreLabel;
using tasks::regression_metrics;
}  // namespace berth::train
