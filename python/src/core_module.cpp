// berth._core: the Python module over libberth (python/berth wraps it in HF-shaped classes).
#include "bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "berth's C++ core: the Trainer, TrainingArguments, placement reports, doctor and tokenizers";
  berth::python::bind_errors(m);
  berth::python::bind_training_arguments(m);
  berth::python::bind_trainer(m);
  berth::python::bind_placement(m);
  berth::python::bind_doctor(m);
  berth::python::bind_tokenizer(m);
  berth::python::bind_jobs(m);
}
