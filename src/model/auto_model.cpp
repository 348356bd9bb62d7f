// AutoModel: the family table, the default task, and loading any family's checkpoint with its head.
#include "berth/model/auto_model.h"

#include "berth/core/error.h"
#include "berth/model/bert_family.h"
#include "berth/model/deberta_v2_family.h"
#include "berth/model/distilbert_family.h"
#include "berth/model/electra_family.h"
#include "berth/model/gpt2_family.h"
#include "berth/model/llama_family.h"
#include "berth/model/modernbert_family.h"
#include "berth/model/roberta_family.h"
#include "berth/placement/inspect.h"
#include "core/text.h"

#include <torch/nn/module.h>

#include <filesystem>

namespace berth {
namespace {

namespace fs = std::filesystem;

std::string supported_types() {
  std::vector<std::string> types;
  for (const ModelFamily& family : model_families()) types.push_back("\"" + family.model_type + "\"");
  return text::join(types, ", ");
}

}  // namespace

const std::vector<ModelFamily>& model_families() {
  static const std::vector<ModelFamily> families = {
      bert_family(),    roberta_family(),    xlm_roberta_family(), distilbert_family(),
      electra_family(), modernbert_family(), gpt2_family(),        llama_family(),
      mistral_family(), qwen2_family(),      deberta_v2_family(),
  };
  return families;
}

const ModelFamily& model_family(const std::string& model_type, const std::string& where) {
  for (const ModelFamily& family : model_families())
    if (family.model_type == model_type) return family;
  BERTH_FAIL(where, " is \"", model_type, "\", a model family berth does not implement; it implements ",
             supported_types(),
             " (other families differ in ways that would load without error and compute the wrong thing). "
             "Fix: use a checkpoint of one of those families");
}

ModelTask default_task(const PretrainedConfig& config) {
  if (config.architectures)
    for (const std::string& architecture : *config.architectures)
      if (std::optional<ModelTask> task = task_of_architecture(architecture)) return *task;
  return ModelTask::SequenceClassification;
}

namespace {

const ModelFamily& family_for(const PretrainedConfig& config, ModelTask task) {
  const ModelFamily& family = model_family(config.model_type(), config.where("model_type"));
  for (ModelTask t : family.tasks)
    if (t == task) return family;
  std::vector<std::string> names;
  for (ModelTask t : family.tasks) names.push_back(task_name(t));
  BERTH_FAIL("model_type \"", family.model_type, "\" has no ", task_name(task), " head in berth; it has ",
             text::join(names, ", "), ". Fix: pass --task with one of those, or use a family that has it");
}

}  // namespace

int64_t max_positions(const PretrainedConfig& config) {
  const ModelFamily& family = model_family(config.model_type(), config.where("model_type"));
  if (family.max_positions) return family.max_positions(config);
  if (config.has("n_positions")) return config.get_int("n_positions");
  return config.get_int("max_position_embeddings");
}

std::shared_ptr<TaskModel> build_task_model(const PretrainedConfig& config, ModelTask task,
                                            const TaskModelInit& init) {
  return family_for(config, task).build(config, task, init);
}

namespace {

// dir/config.json with options' labels and problem type, the task it is for, and that task's family.
struct TaskConfig {
  PretrainedConfig config;
  ModelTask task;
  const ModelFamily* family;
  std::vector<std::string> warnings;  // config.json's
};

TaskConfig read_task_config(const std::string& dir, const PretrainedOptions& options,
                            std::optional<ModelTask> task) {
  check_model_dir(dir, options);
  std::vector<std::string> warnings;
  TaskConfig out{PretrainedConfig::load((fs::path(dir) / "config.json").string(), &warnings),
                 ModelTask::SequenceClassification, nullptr, std::move(warnings)};
  if (options.labels) out.config.set_labels(*options.labels);
  if (options.num_labels) out.config.set_num_labels(*options.num_labels);
  if (options.problem_type) out.config.problem_type = *options.problem_type;
  out.task = task.value_or(default_task(out.config));
  out.family = &family_for(out.config, out.task);
  return out;
}

}  // namespace

Pretrained<std::shared_ptr<TaskModel>> load_task_model(const std::string& dir_text,
                                                       const PretrainedOptions& options,
                                                       std::optional<ModelTask> task) {
  TaskConfig c = read_task_config(dir_text, options, task);
  Pretrained<std::shared_ptr<TaskModel>> result;
  result.model = c.family->build(c.config, c.task, TaskModelInit{/*random=*/false, std::nullopt});
  result.model->module().to(options.dtype);
  result.report = load_weights(result.model->module(), dir_text, c.family->layout(c.config, c.task), options,
                               c.config.num_labels());
  // config.json's warnings come first, as HF logs them.
  std::vector<std::string>& warnings = result.report.warnings;
  warnings.insert(warnings.begin(), c.warnings.begin(), c.warnings.end());
  return result;
}

Pretrained<std::shared_ptr<TaskModel>> share_task_model(const std::string& dir, const SharedTensors& tensors,
                                                        const std::string& source,
                                                        const PretrainedOptions& options,
                                                        std::optional<ModelTask> task) {
  TaskConfig c = read_task_config(dir, options, task);
  Pretrained<std::shared_ptr<TaskModel>> result;
  result.model = c.family->build(c.config, c.task, TaskModelInit{/*random=*/false, std::nullopt});
  result.model->module().to(options.dtype);
  result.report =
      share_parameters(result.model->module(), tensors, c.family->layout(c.config, c.task), source);
  std::vector<std::string>& warnings = result.report.warnings;
  warnings.insert(warnings.begin(), c.warnings.begin(), c.warnings.end());
  return result;
}

}  // namespace berth
