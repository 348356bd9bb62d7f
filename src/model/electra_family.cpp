// The ELECTRA family entry: its heads and checkpoint names.
#include "berth/model/electra_family.h"

#include "berth/model/electra_model.h"
#include "berth/model/encoder_family.h"

#include <memory>

namespace berth {

ModelFamily electra_family() {
  // Non-persistent buffers older checkpoints hold, and the generator's output tied to the word embeddings.
  return encoder_family(
      {"electra",
       "Electra",
       "electra.",
       {"embeddings.position_ids", "embeddings.token_type_ids", "generator_lm_head.weight"},
       {"classifier.", "qa_outputs.", "generator_predictions.", "generator_lm_head."}},
      [](const PretrainedConfig& config, ModelTask task, const CheckpointLayout& layout,
         const TaskModelInit& init) {
        return std::shared_ptr<TaskModel>(std::make_shared<ElectraTaskModel>(config, task, layout, init));
      });
}

}  // namespace berth
