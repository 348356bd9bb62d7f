// HF's lr_scheduler_type with lr_scheduler_kwargs: the schedule transformers.get_scheduler builds from them,
// as berth's SchedulerOptions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "berth/optim/lr_scheduler.h"

namespace berth::optim {

// The keyword arguments HF's schedule function for `type` takes beyond the warmup and total steps
// (get_scheduler passes lr_scheduler_kwargs to it), sorted: cosine {num_cycles}, polynomial {lr_end,
// power}, reduce_lr_on_plateau torch's {cooldown, eps, factor, min_lr, mode, patience, threshold,
// threshold_mode} ...; none for linear, constant and constant_with_warmup.
std::vector<std::string> scheduler_kwarg_names(SchedulerType type);

// HF's schedule `type_name` over `total_steps` with `warmup_steps`, its options set from `kwargs_json` (a
// JSON object, HF's lr_scheduler_kwargs; "" or "null": none) as get_scheduler passes them, with HF's
// defaults for the rest (cosine_with_restarts: num_cycles 1). `base_lr` turns cosine_with_min_lr's min_lr
// into its min_lr_rate. Throws berth::Error for DeepSpeed's type names, a kwarg the schedule does not take
// (naming it and the accepted ones), a value of the wrong JSON type, and the contradictions HF raises on
// (min_lr with min_lr_rate).
SchedulerOptions hf_scheduler_options(std::string_view type_name, int64_t warmup_steps, int64_t total_steps,
                                      double base_lr, const std::string& kwargs_json);

// Throws berth::Error unless `kwargs_json` is "" or a JSON object (the check of --lr_scheduler_kwargs).
void check_scheduler_kwargs_json(const std::string& kwargs_json);

}  // namespace berth::optim
