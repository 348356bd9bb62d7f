// The ModernBERT family entry: its heads, checkpoint names and HF's truncated-normal init.
#include "berth/model/modernbert_family.h"

#include "berth/model/encoder_family.h"
#include "berth/model/modernbert_model.h"

#include <memory>

namespace berth {

ModelFamily modernbert_family() {
  // The masked-LM decoder's weight is the token embeddings (HF saves only its bias).
  return encoder_family(
      {"modernbert", "ModernBert", "model.", {"decoder.weight"}, {"head.", "classifier.", "decoder."}},
      [](const PretrainedConfig& config, ModelTask task, const CheckpointLayout& layout,
         const TaskModelInit& init) {
        return std::shared_ptr<TaskModel>(std::make_shared<ModernBertTaskModel>(config, task, layout, init));
      },
      [](const PretrainedConfig& config, torch::nn::Module& module, std::optional<uint64_t> seed) {
        init_modernbert_weights(module, ModernBertShape::from(config), seed);
      });
}

}  // namespace berth
