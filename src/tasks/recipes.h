// Each task's recipe, for task_recipe() to choose from.
#pragma once

#include "berth/tasks/task_recipe.h"

namespace berth::tasks {

const TaskRecipe& sequence_classification_recipe();
const TaskRecipe& token_classification_recipe();
const TaskRecipe& question_answering_recipe();
const TaskRecipe& masked_lm_recipe();
const TaskRecipe& causal_lm_recipe();

}  // namespace berth::tasks
