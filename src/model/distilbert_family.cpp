// The DistilBERT family entry: its heads and checkpoint names.
#include "berth/model/distilbert_family.h"

#include "berth/model/distilbert_model.h"
#include "berth/model/encoder_family.h"

#include <memory>

namespace berth {

ModelFamily distilbert_family() {
  // A non-persistent buffer older checkpoints hold, and the MLM projector tied to the word embeddings.
  return encoder_family(
      {"distilbert",
       "DistilBert",
       "distilbert.",
       {"embeddings.position_ids", "vocab_projector.weight"},
       {"pre_classifier.", "classifier.", "qa_outputs.", "vocab_transform.", "vocab_layer_norm.",
        "vocab_projector."}},
      [](const PretrainedConfig& config, ModelTask task, const CheckpointLayout& layout,
         const TaskModelInit& init) {
        return std::shared_ptr<TaskModel>(std::make_shared<DistilBertTaskModel>(config, task, layout, init));
      });
}

}  // namespace berth
