// run_predict_job: what `berth predict` does, as one library call: the task's recipe writes the lines.
#include "berth/train/predict_job.h"

#include <ostream>

#include "berth/core/output_path.h"
#include "berth/model/pretrained_config.h"
#include "berth/tasks/task_recipe.h"
#include "berth/train/encode_options.h"
#include "train/trainer_runner.h"

namespace berth::train {

size_t run_predict_job(const PredictJobOptions& options, std::ostream& out, std::ostream& log) {
  // Before the model loads: a bad --output would otherwise fail only after every prediction.
  if (!options.output.empty()) check_output_file(options.output, "--output");
  // --task, else what the checkpoint's architectures say.
  std::optional<PretrainedConfig> checkpoint;
  if (options.task.empty()) checkpoint = PretrainedConfig::load(options.model + "/config.json");
  const tasks::TaskRecipe& recipe =
      tasks::task_recipe(tasks::resolve_task(options.task, checkpoint ? &*checkpoint : nullptr));
  // For the tasks that predict through the Trainer's evaluation loop (question answering's windows).
  RunnerOptions runner_options;
  runner_options.model_dir = options.model;
  runner_options.batch_size = options.predictor.batch_size;
  runner_options.device = options.predictor.device;
  TrainerRunner runner(runner_options);
  return recipe.predict({options, trained_encode_options(options.model), runner}, out, log);
}

}  // namespace berth::train
