// The DeBERTa-v2 family entry: its heads and checkpoint names.
#include "berth/model/deberta_v2_family.h"

#include "berth/model/deberta_v2_model.h"
#include "berth/model/encoder_family.h"

#include <memory>

namespace berth {

ModelFamily deberta_v2_family() {
  // Names checkpoints hold that the model has no tensor for: the non-persistent position ids, the legacy
  // decoder tied to the word embeddings and to cls.predictions.bias. Pretraining checkpoints (v3) also carry
  // lm_predictions and the replaced-token detector mask_predictions: other heads.
  const EncoderBuilder build = [](const PretrainedConfig& config, ModelTask task,
                                  const CheckpointLayout& layout, const TaskModelInit& init) {
    return std::shared_ptr<TaskModel>(std::make_shared<DebertaV2TaskModel>(config, task, layout, init));
  };
  ModelFamily family = encoder_family(
      {"deberta-v2",
       "DebertaV2",
       "deberta.",
       {"embeddings.position_ids", "predictions.decoder.weight", "predictions.decoder.bias"},
       {"pooler.", "classifier.", "qa_outputs.", "cls.", "lm_predictions.", "mask_predictions."}},
      build);
  // Without position_biased_input the model has no absolute position embeddings, which v3 checkpoints still
  // hold (HF's _keys_to_ignore_on_load_unexpected).
  const auto names_layout = family.layout;
  family.layout = [names_layout](const PretrainedConfig& config, ModelTask task) {
    CheckpointLayout layout = names_layout(config, task);
    if (!config.get_bool("position_biased_input", true))
      layout.ignored.push_back("embeddings.position_embeddings.weight");
    return layout;
  };
  family.build = [layout = family.layout, build](const PretrainedConfig& config, ModelTask task,
                                                 const TaskModelInit& init) {
    return build(config, task, layout(config, task), init);
  };
  return family;
}

}  // namespace berth
