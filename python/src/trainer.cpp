// TrainingJob: the Python Trainer's C++ half. It builds the job as `berth train` does (prepare_training_job),
// runs the C++ loop with the GIL released, and takes the GIL only inside the Python compute_metrics and
// callbacks; a Ctrl-C is noticed at the next step's end and stops the run there, saving a checkpoint when
// save_strategy saves any.
#include <torch/csrc/utils/pybind.h>

#include <pybind11/stl.h>

#include <iostream>
#include <memory>
#include <set>

#include "bindings.h"

#include "berth/core/error.h"
#include "berth/train/hyperparameter_search.h"
#include "berth/train/training_job.h"

namespace py = pybind11;

namespace berth::python {
namespace {

using train::LogEntry;
using train::TrainerControl;
using train::TrainerState;
using train::TrainingArguments;

// A Python object that C++ copies freely (std::function copies, without the GIL): shared, and released with
// the GIL held.
using SharedObject = std::shared_ptr<py::object>;
SharedObject share(py::object object) {
  return SharedObject(new py::object(std::move(object)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
}

py::dict state_dict(const TrainerState& state) {
  py::dict d;
  d["epoch"] = state.epoch;
  d["global_step"] = state.global_step;
  d["max_steps"] = state.max_steps;
  d["logging_steps"] = state.logging_steps;
  d["eval_steps"] = state.eval_steps;
  d["save_steps"] = state.save_steps;
  d["num_train_epochs"] = state.num_train_epochs;
  d["train_batch_size"] = state.train_batch_size;
  d["log_history"] = state.log_history;
  d["best_metric"] = state.best_metric;
  d["best_model_checkpoint"] = state.best_model_checkpoint;
  d["is_local_process_zero"] = state.is_local_process_zero;
  d["is_world_process_zero"] = state.is_world_process_zero;
  d["trial_name"] = state.trial_name;
  return d;
}

py::dict control_dict(const TrainerControl& c) {
  py::dict d;
  d["should_training_stop"] = c.should_training_stop;
  d["should_epoch_stop"] = c.should_epoch_stop;
  d["should_save"] = c.should_save;
  d["should_evaluate"] = c.should_evaluate;
  d["should_log"] = c.should_log;
  return d;
}

void read_control(const py::handle& returned, TrainerControl& c) {
  if (returned.is_none()) return;
  const auto d = returned.cast<py::dict>();
  c.should_training_stop = d["should_training_stop"].cast<bool>();
  c.should_epoch_stop = d["should_epoch_stop"].cast<bool>();
  c.should_save = d["should_save"].cast<bool>();
  c.should_evaluate = d["should_evaluate"].cast<bool>();
  c.should_log = d["should_log"].cast<bool>();
}

// The Python callbacks as one C++ TrainerCallback: `dispatch(event, state, control, payload)`
// (berth/_trainer.py) calls each Python callback's method of that name and returns the control. Only the
// events some Python callback has are dispatched (a step costs no Python call otherwise); every step's end
// also checks for a Ctrl-C.
class PythonCallbacks : public train::TrainerCallback {
 public:
  PythonCallbacks(SharedObject dispatch, std::set<std::string> events)
      : dispatch_(std::move(dispatch)), events_(std::move(events)) {}

  void on_init_end(const TrainingArguments&, TrainerState& s, TrainerControl& c) override {
    call("on_init_end", s, c);
  }
  void on_train_begin(const TrainingArguments&, TrainerState& s, TrainerControl& c) override {
    interrupted_ = false;
    call("on_train_begin", s, c);
  }
  void on_train_end(const TrainingArguments&, TrainerState& s, TrainerControl& c) override {
    call("on_train_end", s, c);
  }
  void on_epoch_begin(const TrainingArguments&, TrainerState& s, TrainerControl& c) override {
    call("on_epoch_begin", s, c);
  }
  void on_epoch_end(const TrainingArguments&, TrainerState& s, TrainerControl& c) override {
    call("on_epoch_end", s, c);
  }
  void on_step_begin(const TrainingArguments&, TrainerState& s, TrainerControl& c) override {
    call("on_step_begin", s, c);
  }
  void on_substep_end(const TrainingArguments&, TrainerState& s, TrainerControl& c) override {
    call("on_substep_end", s, c);
  }
  void on_pre_optimizer_step(const TrainingArguments&, TrainerState& s, TrainerControl& c) override {
    call("on_pre_optimizer_step", s, c);
  }
  void on_optimizer_step(const TrainingArguments&, TrainerState& s, TrainerControl& c) override {
    call("on_optimizer_step", s, c);
  }
  void on_step_end(const TrainingArguments& args, TrainerState& s, TrainerControl& c) override {
    call("on_step_end", s, c);
    check_interrupt(args, c);
  }
  void on_log(const TrainingArguments&, TrainerState& s, TrainerControl& c, const LogEntry& logs) override {
    call("on_log", s, c, &logs);
  }
  void on_evaluate(const TrainingArguments&, TrainerState& s, TrainerControl& c,
                   const train::Metrics& metrics) override {
    call("on_evaluate", s, c, &metrics);
  }
  void on_predict(const TrainingArguments&, TrainerState& s, TrainerControl& c,
                  const train::Metrics& metrics) override {
    call("on_predict", s, c, &metrics);
  }
  void on_save(const TrainingArguments&, TrainerState& s, TrainerControl& c) override {
    call("on_save", s, c);
  }
  std::string name() const override { return "PythonCallbacks"; }
  bool interrupted() const { return interrupted_; }

 private:
  void call(const char* event, TrainerState& s, TrainerControl& c,
            const std::map<std::string, double>* payload = nullptr) {
    if (!events_.count(event)) return;
    py::gil_scoped_acquire gil;
    py::object p = payload ? py::cast(*payload) : py::none();
    read_control((*dispatch_)(event, state_dict(s), control_dict(c), p), c);
  }

  // Python's SIGINT handler only sets a flag while C++ runs; running it here turns a Ctrl-C into a stop at
  // this step, with a checkpoint when the run saves any (HF's Trainer would die mid-step instead).
  void check_interrupt(const TrainingArguments& args, TrainerControl& c) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() == 0) return;
    if (!PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) throw py::error_already_set();
    PyErr_Clear();
    interrupted_ = true;
    c.should_training_stop = true;
    c.should_save = args.save_strategy != "no";
    std::cerr << "berth: interrupted; stopping after this step"
              << (c.should_save ? " with a checkpoint" : " (save_strategy no: no checkpoint)") << "\n";
  }

  SharedObject dispatch_;
  std::set<std::string> events_;
  bool interrupted_ = false;
};

// HF's compute_metrics through `adapter(predictions, label_ids)` (berth/_trainer.py builds the
// EvalPrediction).
train::ComputeMetrics python_metrics(SharedObject adapter) {
  return [adapter](const train::EvalPrediction& prediction) {
    py::gil_scoped_acquire gil;
    py::object labels = prediction.label_ids.defined() ? py::cast(prediction.label_ids) : py::none();
    return (*adapter)(py::cast(prediction.logits), labels).cast<std::map<std::string, double>>();
  };
}

template <typename T>
T option(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) && !d[key].is_none() ? d[key].cast<T>() : fallback;
}

train::TrainingJobOptions job_options(const py::dict& d, const std::string& args_json) {
  train::TrainingJobOptions o;
  // Unset keys keep TrainingJobOptions' own defaults, the ones `berth train`'s flags start from.
  o.model = option(d, "model", o.model);
  o.model_preset = option(d, "model_preset", o.model_preset);
  o.task = option(d, "task", o.task);
  o.tokenizer = option(d, "tokenizer", o.tokenizer);
  o.config_overrides = option(d, "config_overrides", o.config_overrides);
  o.block_size = option(d, "block_size", o.block_size);
  o.mlm_probability = option(d, "mlm_probability", o.mlm_probability);
  o.data.train = option(d, "train", o.data.train);
  o.data.eval = option(d, "eval", o.data.eval);
  o.data.test = option(d, "test", o.data.test);
  o.data.text_column = option(d, "text_column", o.data.text_column);
  o.data.text_pair_column = option(d, "text_pair_column", o.data.text_pair_column);
  o.data.label_column = option(d, "label_column", o.data.label_column);
  o.data.problem_type = option(d, "problem_type", o.data.problem_type);
  o.early_stopping_patience = option(d, "early_stopping_patience", o.early_stopping_patience);
  o.early_stopping_threshold = option(d, "early_stopping_threshold", o.early_stopping_threshold);
  o.args = train::TrainingArguments::from_json_text(args_json, "TrainingArguments");
  if (d.contains("shared_tensors") && !d["shared_tensors"].is_none()) {
    for (const auto& [name, tensor] : d["shared_tensors"].cast<py::dict>())
      o.shared_tensors.emplace(name.cast<std::string>(), tensor.cast<at::Tensor>());
    o.shared_source = option(d, "shared_source", std::string("the model"));
  }
  return o;
}

py::dict prediction_dict(const train::PredictionOutput& p) {
  py::dict d;
  auto tensor = [](const at::Tensor& t) { return t.defined() ? py::cast(t) : py::none(); };
  d["predictions"] = tensor(p.logits);  // HF's PredictionOutput.predictions: the logits
  d["probabilities"] = tensor(p.probabilities);
  d["predicted_ids"] = tensor(p.predictions);
  d["label_ids"] = tensor(p.label_ids);
  d["metrics"] = p.metrics;
  return d;
}

class TrainingJob {
 public:
  TrainingJob(const py::dict& options, const std::string& args_json, py::object compute_metrics,
              py::object dispatch, const std::set<std::string>& events) {
    train::TrainingJobOptions o = job_options(options, args_json);
    if (!compute_metrics.is_none()) o.compute_metrics = python_metrics(share(std::move(compute_metrics)));
    callbacks_ = std::make_shared<PythonCallbacks>(share(std::move(dispatch)), events);
    o.callbacks.push_back(callbacks_);
    py::gil_scoped_release release;
    job_ = train::prepare_training_job(std::move(o), std::cout);
  }

  py::dict train(std::optional<std::string> resume) {
    train::TrainOutput out;
    {
      py::gil_scoped_release release;
      out = job_.trainer->train(resume);
      job_.trainer->save_metrics("train", out.metrics);
    }
    py::dict d;
    d["global_step"] = out.global_step;
    d["training_loss"] = out.training_loss;
    d["metrics"] = out.metrics;
    d["interrupted"] = callbacks_->interrupted();
    return d;
  }

  std::map<std::string, double> evaluate(std::optional<std::string> path, const std::string& prefix) {
    py::gil_scoped_release release;
    if (!path) {
      BERTH_CHECK(job_.eval,
                  "Trainer.evaluate(): no eval_dataset. Fix: Trainer(..., eval_dataset=...) or "
                  "trainer.evaluate(eval_dataset=...)");
      return job_.trainer->evaluate(nullptr, prefix);
    }
    const auto dataset = train::encode_job_file(job_, *path);
    return job_.trainer->evaluate(dataset.get(), prefix);
  }

  py::dict predict(const std::string& path, const std::string& prefix) {
    train::PredictionOutput out;
    {
      py::gil_scoped_release release;
      const auto dataset = train::encode_job_file(job_, path);
      out = job_.trainer->predict(*dataset, prefix);
    }
    return prediction_dict(out);
  }

  void save_model(const std::string& dir) {
    py::gil_scoped_release release;
    job_.trainer->save_model(dir);
  }

  py::dict hyperparameter_search(const std::string& space_json, size_t n_trials, const std::string& direction,
                                 const std::string& method, const std::string& objective) {
    train::BestRun best;
    {
      py::gil_scoped_release release;
      train::check_search_allowed(job_.options);
      const auto space = train::SearchSpace::from_json_text(space_json, "hp_space");
      best = job_.trainer->hyperparameter_search(space, n_trials, train::parse_direction(direction),
                                                 train::parse_search_method(method), objective);
    }
    py::dict d;
    d["run_id"] = "run-" + std::to_string(best.trial);
    d["objective"] = best.objective;
    d["hyperparameters"] = best.params;
    d["metrics"] = best.metrics;
    return d;
  }

  // The rendezvous host (rank 0) leaves last: every rank waits here before the process ends.
  void barrier() {
    py::gil_scoped_release release;
    job_.plan->process.comm->barrier("the end of the Python script's training");
  }

  std::vector<std::string> labels() const { return job_.text.label_map.labels(); }
  std::string args_json() const { return job_.trainer->args().to_json_text(); }
  int64_t rank() const { return job_.plan->process.env.rank; }
  int64_t world_size() const { return job_.plan->process.env.world_size; }
  std::string device() const { return c10::Device(job_.trainer->device()).str(); }

 private:
  std::shared_ptr<PythonCallbacks> callbacks_;
  train::PreparedTrainingJob job_;
};

}  // namespace

void bind_trainer(py::module_& m) {
  py::class_<TrainingJob>(m, "TrainingJob")
      .def(py::init<const py::dict&, const std::string&, py::object, py::object,
                    const std::set<std::string>&>(),
           py::arg("options"), py::arg("args_json"), py::arg("compute_metrics"), py::arg("dispatch"),
           py::arg("events"))
      .def("train", &TrainingJob::train, py::arg("resume_from_checkpoint") = py::none())
      .def("evaluate", &TrainingJob::evaluate, py::arg("path") = py::none(), py::arg("prefix") = "eval")
      .def("predict", &TrainingJob::predict, py::arg("path"), py::arg("prefix") = "test")
      .def("save_model", &TrainingJob::save_model, py::arg("dir") = "")
      .def("hyperparameter_search", &TrainingJob::hyperparameter_search, py::arg("space_json"),
           py::arg("n_trials"), py::arg("direction"), py::arg("method"), py::arg("objective"))
      .def("barrier", &TrainingJob::barrier)
      .def_property_readonly("labels", &TrainingJob::labels)
      .def_property_readonly("args_json", &TrainingJob::args_json)
      .def_property_readonly("rank", &TrainingJob::rank)
      .def_property_readonly("world_size", &TrainingJob::world_size)
      .def_property_readonly("device", &TrainingJob::device);
}

}  // namespace berth::python
