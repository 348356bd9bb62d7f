// run_eval_job: what `berth eval` does, as one library call.
#include "berth/train/eval_job.h"

#include <memory>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "berth/core/atomic_file.h"
#include "berth/core/error.h"
#include "berth/core/output_path.h"
#include "berth/model/auto_model.h"
#include "berth/tasks/task_recipe.h"
#include "berth/tokenizer/tokenizer_files.h"
#include "berth/train/encode_options.h"
#include "berth/train/metrics_text.h"
#include "train/trainer_runner.h"

namespace berth::train {

std::map<std::string, double> run_eval_job(const EvalJobOptions& options, std::ostream& out) {
  BERTH_CHECK(options.batch_size >= 1, "eval: --batch-size must be at least 1, found ", options.batch_size,
              ". Fix: --batch-size 32");
  if (!options.output.empty()) check_output_file(options.output, "--output");
  const tokenizer::Tokenizer tokenizer = tokenizer::load_tokenizer(options.model);
  std::optional<ModelTask> task;
  if (!options.task.empty()) task = parse_task(options.task);
  auto loaded = load_task_model(options.model, {}, task);
  const TaskModelInfo info = loaded.model->info();
  BERTH_CHECK(
      loaded.report.missing.empty(), "eval: ", options.model, " is not a trained ", task_name(info.task),
      " model (it lacks ", loaded.report.missing.front(),
      "). Fix: evaluate the output directory of `berth train`, or pass the --task it was trained for");
  const tasks::EvalData eval = tasks::task_recipe(info.task).load_eval_data(
      {options, info, tokenizer, trained_encode_options(options.model)});
  RunnerOptions runner{options.model, options.batch_size, options.device,
                       options.bf16,  options.seed,       options.masking};
  const auto prediction =
      TrainerRunner(runner).predict(loaded.model, tokenizer, *eval.dataset, eval.compute_metrics, "eval");
  write_metrics(out, eval.title, prediction.metrics);
  if (!prediction.confusion.empty())
    out << "confusion matrix:\n" << format_confusion_table(prediction.confusion, info.labels);
  if (!options.output.empty()) {
    nlohmann::json json = nlohmann::json::object();
    for (const auto& [name, value] : prediction.metrics) json[name] = value;
    write_file_atomically(options.output, json.dump(4) + "\n");
  }
  return prediction.metrics;
}

}  // namespace berth::train
