// encoder_family: one layout and build rule for the encoder families.
#include "berth/model/encoder_family.h"

#include "berth/model/encoder_task_model.h"

namespace berth {

ModelFamily encoder_family(EncoderNames names, EncoderBuilder build, EncoderInit init) {
  ModelFamily family;
  family.model_type = names.model_type;
  family.tasks = {ModelTask::SequenceClassification, ModelTask::TokenClassification, ModelTask::MaskedLM,
                  ModelTask::QuestionAnswering};
  family.layout = [names, init](const PretrainedConfig& config, ModelTask task) {
    CheckpointLayout layout;
    layout.architecture = names.class_prefix + head_suffix(task);
    layout.base_prefix = names.base_prefix;
    layout.ignored = names.ignored;
    layout.head_prefixes = names.head_prefixes;
    if (init) {
      layout.init = [init, config](torch::nn::Module& module, std::optional<uint64_t> seed) {
        init(config, module, seed);
      };
      return layout;
    }
    const double range = config.get_number("initializer_range", 0.02);
    layout.init = [range](torch::nn::Module& module, std::optional<uint64_t> seed) {
      init_encoder_weights(module, range, seed);
    };
    return layout;
  };
  family.build = [layout = family.layout, build = std::move(build)](
                     const PretrainedConfig& config, ModelTask task, const TaskModelInit& init) {
    return build(config, task, layout(config, task), init);
  };
  return family;
}

}  // namespace berth
