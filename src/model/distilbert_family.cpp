// The DistilBERT family entry: its heads and checkpoint names.
#include "berth/model/distilbert_family.h"

#include "berth/model/distilbert_model.h"
#include "berth/model/encoder_task_model.h"

#include <memory>

namespace berth {

ModelFamily distilbert_family() {
  ModelFamily family;
  family.model_type = "distilbert";
  family.tasks = {ModelTask::SequenceClassification, ModelTask::TokenClassification, ModelTask::MaskedLM,
                  ModelTask::QuestionAnswering};
  family.layout = [](const PretrainedConfig& config, ModelTask task) {
    CheckpointLayout layout;
    layout.architecture = std::string("DistilBert") + head_suffix(task);
    layout.base_prefix = "distilbert.";
    // A non-persistent buffer older checkpoints hold, and the MLM projector tied to the word embeddings.
    layout.ignored = {"embeddings.position_ids", "vocab_projector.weight"};
    layout.head_prefixes = {"pre_classifier.",  "classifier.",       "qa_outputs.",
                            "vocab_transform.", "vocab_layer_norm.", "vocab_projector."};
    const double range = config.get_number("initializer_range", 0.02);
    layout.init = [range](torch::nn::Module& module, std::optional<uint64_t> seed) {
      init_encoder_weights(module, range, seed);
    };
    return layout;
  };
  family.build = [layout = family.layout](const PretrainedConfig& config, ModelTask task,
                                          const TaskModelInit& init) {
    return std::shared_ptr<TaskModel>(
        std::make_shared<DistilBertTaskModel>(config, task, layout(config, task), init));
  };
  return family;
}

}  // namespace berth
