// doctor_json: `berth doctor --json` as one call (python/berth turns the text into a dict).
#include "bindings.h"

#include "berth/doctor/doctor.h"

namespace py = pybind11;

namespace berth::python {

void bind_doctor(py::module_& m) {
  m.def(
      "doctor_json",
      [](const std::string& device, const std::string& model_dir) {
        DoctorOptions options;
        options.device = device;
        options.model_dir = model_dir;
        return format_doctor_json(run_doctor(options));
      },
      py::arg("device") = "auto", py::arg("model_dir") = "");
}

}  // namespace berth::python
