// run_eval_job / run_predict_job: `berth eval` and `berth predict` as calls, run with the GIL released
// (python/berth's evaluate_model and predict_file).
#include <pybind11/stl.h>

#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "bindings.h"

#include "berth/train/eval_job.h"
#include "berth/train/predict_job.h"

namespace py = pybind11;

namespace berth::python {
namespace {

// The metrics `berth eval` prints (to stdout, as the command does) and returns.
std::map<std::string, double> eval_job(const std::string& model_dir, const std::optional<std::string>& test,
                                       const std::optional<std::string>& eval,
                                       const std::optional<std::string>& task, size_t batch_size,
                                       size_t max_length, const std::string& device, bool bf16) {
  train::EvalJobOptions options;
  options.model = model_dir;
  options.data.test = test.value_or("");
  options.data.eval = eval.value_or("");
  options.task = task.value_or("");
  options.batch_size = batch_size;
  options.max_length = max_length;
  options.device = device;
  options.bf16 = bf16;
  py::gil_scoped_release release;
  return train::run_eval_job(options, std::cout);
}

// The number of JSON lines `berth predict` writes to `output` (its messages to stderr).
size_t predict_job(const std::string& model_dir, const std::string& input, const std::string& output,
                   const std::optional<std::string>& task, size_t batch_size, size_t max_length,
                   const std::string& device) {
  train::PredictJobOptions options;
  options.model = model_dir;
  options.input = input;
  options.output = output;
  options.task = task.value_or("");
  options.predictor.batch_size = batch_size;
  options.predictor.max_length = max_length;
  options.predictor.device = device;
  py::gil_scoped_release release;
  return train::run_predict_job(options, std::cout, std::cerr);
}

}  // namespace

void bind_jobs(py::module_& m) {
  m.def("run_eval_job", &eval_job, py::arg("model_dir"), py::arg("test_file") = py::none(),
        py::arg("eval_file") = py::none(), py::arg("task") = py::none(), py::arg("batch_size") = 32,
        py::arg("max_length") = 0, py::arg("device") = "auto", py::arg("bf16") = false);
  m.def("run_predict_job", &predict_job, py::arg("model_dir"), py::arg("input"), py::arg("output"),
        py::arg("task") = py::none(), py::arg("batch_size") = 32, py::arg("max_length") = 0,
        py::arg("device") = "auto");
}

}  // namespace berth::python
