// task_recipe: the one place that chooses by the task; the defaults every recipe starts from.
#include "berth/tasks/task_recipe.h"

#include "berth/core/error.h"
#include "berth/model/auto_model.h"
#include "tasks/recipes.h"

namespace berth::tasks {

std::optional<HeadLabels> TaskRecipe::head_labels(const data::LoadedDatasets&) const { return std::nullopt; }

LabelSmoothing TaskRecipe::label_smoothing(const TaskModelInfo&) const { return LabelSmoothing::Applies; }

std::map<std::string, double> TaskRecipe::metrics(const EvalPrediction&, const TaskModelInfo&,
                                                  std::vector<std::vector<int64_t>>*) const {
  return {};
}

const TaskRecipe& task_recipe(ModelTask task) {
  switch (task) {
    case ModelTask::SequenceClassification:
      return sequence_classification_recipe();
    case ModelTask::TokenClassification:
      return token_classification_recipe();
    case ModelTask::QuestionAnswering:
      return question_answering_recipe();
    case ModelTask::MaskedLM:
      return masked_lm_recipe();
    case ModelTask::CausalLM:
      return causal_lm_recipe();
  }
  BERTH_BUG(false, "task_recipe: a ModelTask without a recipe");
}

ModelTask resolve_task(const std::string& flag, const PretrainedConfig* checkpoint) {
  if (!flag.empty()) return parse_task(flag);
  return checkpoint ? default_task(*checkpoint) : ModelTask::SequenceClassification;
}

}  // namespace berth::tasks
