// The parts of berth._core, one function per concept (each in its own file), that core_module.cpp assembles.
#pragma once

#include <pybind11/pybind11.h>

namespace berth::python {

// berth.Error / berth.PlacementError / berth.InternalError, and the translation of the C++ exceptions to
// them.
void bind_errors(pybind11::module_& m);
// training_arguments_from_kwargs / training_arguments_from_hf / training_argument_specs.
void bind_training_arguments(pybind11::module_& m);
// TrainingJob: a Trainer built as `berth train` builds it, with Python metrics and callbacks.
void bind_trainer(pybind11::module_& m);
// explain_placement's C++ half: the report over named tensors, a batch, a loss and optimizer state.
void bind_placement(pybind11::module_& m);
// doctor_json.
void bind_doctor(pybind11::module_& m);
// Tokenizer: load, encode, encode_batch, decode.
void bind_tokenizer(pybind11::module_& m);
// run_eval_job / run_predict_job: `berth eval` and `berth predict` as calls.
void bind_jobs(pybind11::module_& m);

}  // namespace berth::python
