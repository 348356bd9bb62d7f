// Forwarding header: squad_metrics moved to berth/tasks/ (the task recipes' layer); the old name stays.
#pragma once

#include "berth/tasks/squad_metrics.h"

namespace berth::train {
using tasks::normalize_answer;
using tasks::squad_exact_match;
using tasks::squad_f1;
using tasks::squad_metrics;
using tasks::squad_v2_metrics;
}  // namespace berth::train
