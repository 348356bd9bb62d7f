// The "gpt2" family: builds GPT2TaskModel for causal-lm or sequence-classification, with GPT-2's checkpoint
// layout and n_positions as its longest input.
#include "berth/model/gpt2_family.h"

#include "berth/model/gpt2_model.h"

namespace berth {

ModelFamily gpt2_family() {
  ModelFamily family;
  family.model_type = "gpt2";
  family.tasks = {ModelTask::CausalLM, ModelTask::SequenceClassification};
  family.build = [](const PretrainedConfig& config, ModelTask task, const TaskModelInit& init) {
    GPT2TaskModel model(config, task, init);
    return std::shared_ptr<TaskModel>(model.ptr());
  };
  family.layout = gpt2_checkpoint_layout;
  family.max_positions = [](const PretrainedConfig& config) { return config.get_int("n_positions", 1024); };
  return family;
}

}  // namespace berth
