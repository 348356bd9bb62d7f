// berth.Error (a user's mistake, with the fix), berth.PlacementError (a subclass) and berth.InternalError (a
// bug in berth): C++ exceptions cross into Python as these, with the C++ message unchanged.
#include "bindings.h"

#include "berth/core/error.h"

namespace py = pybind11;

namespace berth::python {

void bind_errors(py::module_& m) {
  // pybind11 tries translators newest first, so PlacementError (an Error too) is registered after Error.
  auto& error = py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  py::register_exception<PlacementError>(m, "PlacementError", error.ptr());
  py::register_exception<InternalError>(m, "InternalError", PyExc_RuntimeError);
}

}  // namespace berth::python
