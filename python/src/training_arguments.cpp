// TrainingArguments' C++ half: keyword arguments (strict, as CLI flags) and HF's TrainingArguments (lenient,
// as a training_args.json) to berth's arguments, returned as their JSON text; the table of names.
#include <pybind11/stl.h>

#include "bindings.h"

#include "berth/train/training_arguments.h"

namespace py = pybind11;

namespace berth::python {

void bind_training_arguments(py::module_& m) {
  m.def(
      "training_arguments_from_kwargs",
      [](const std::string& kwargs_json) {
        return train::training_arguments_from_kwargs_json(kwargs_json).to_json_text();
      },
      py::arg("kwargs_json"), "berth's TrainingArguments (JSON text) from keyword arguments (a JSON object)");
  m.def(
      "training_arguments_from_hf",
      [](const std::string& hf_json) {
        std::vector<std::string> warnings;
        const auto args =
            train::TrainingArguments::from_json_text(hf_json, "transformers.TrainingArguments", &warnings);
        return py::make_tuple(args.to_json_text(), warnings);
      },
      py::arg("hf_json"), "(JSON text, warnings) from HF TrainingArguments.to_json_string()");
  m.def("training_argument_names", [] {
    std::vector<std::string> names;
    for (const auto& spec : train::training_argument_specs()) names.push_back(spec.name);
    return names;
  });
}

}  // namespace berth::python
