// The ELECTRA family entry: its heads and checkpoint names.
#include "berth/model/electra_family.h"

#include "berth/model/electra_model.h"
#include "berth/model/encoder_task_model.h"

#include <memory>

namespace berth {

ModelFamily electra_family() {
  ModelFamily family;
  family.model_type = "electra";
  family.tasks = {ModelTask::SequenceClassification, ModelTask::TokenClassification, ModelTask::MaskedLM,
                  ModelTask::QuestionAnswering};
  family.layout = [](const PretrainedConfig& config, ModelTask task) {
    CheckpointLayout layout;
    layout.architecture = std::string("Electra") + head_suffix(task);
    layout.base_prefix = "electra.";
    // Non-persistent buffers older checkpoints hold, and the generator's output tied to the word embeddings.
    layout.ignored = {"embeddings.position_ids", "embeddings.token_type_ids", "generator_lm_head.weight"};
    layout.head_prefixes = {"classifier.", "qa_outputs.", "generator_predictions.", "generator_lm_head."};
    const double range = config.get_number("initializer_range", 0.02);
    layout.init = [range](torch::nn::Module& module, std::optional<uint64_t> seed) {
      init_encoder_weights(module, range, seed);
    };
    return layout;
  };
  family.build = [layout = family.layout](const PretrainedConfig& config, ModelTask task,
                                          const TaskModelInit& init) {
    return std::shared_ptr<TaskModel>(
        std::make_shared<ElectraTaskModel>(config, task, layout(config, task), init));
  };
  return family;
}

}  // namespace berth
