// The RoBERTa and XLM-RoBERTa family entries: their heads, checkpoint names and position limit.
#include "berth/model/roberta_family.h"

#include "berth/model/encoder_task_model.h"
#include "berth/model/roberta_model.h"

#include <memory>
#include <string>

namespace berth {
namespace {

// The two families differ only in model_type and HF's class names (XLMRoberta<Head> vs Roberta<Head>).
ModelFamily roberta_like_family(const std::string& model_type, const std::string& class_prefix) {
  ModelFamily family;
  family.model_type = model_type;
  family.tasks = {ModelTask::SequenceClassification, ModelTask::TokenClassification, ModelTask::MaskedLM,
                  ModelTask::QuestionAnswering};
  family.layout = [class_prefix](const PretrainedConfig& config, ModelTask task) {
    CheckpointLayout layout;
    layout.architecture = class_prefix + head_suffix(task);
    layout.base_prefix = "roberta.";
    // Non-persistent buffers older checkpoints hold, and the MLM decoder tied to the word embeddings and to
    // lm_head.bias (HF saves neither).
    layout.ignored = {"embeddings.position_ids", "embeddings.token_type_ids", "lm_head.decoder.weight",
                      "lm_head.decoder.bias"};
    layout.head_prefixes = {"classifier.", "qa_outputs.", "lm_head."};
    const double range = config.get_number("initializer_range", 0.02);
    layout.init = [range](torch::nn::Module& module, std::optional<uint64_t> seed) {
      init_encoder_weights(module, range, seed);
    };
    return layout;
  };
  family.build = [layout = family.layout](const PretrainedConfig& config, ModelTask task,
                                          const TaskModelInit& init) {
    return std::shared_ptr<TaskModel>(
        std::make_shared<RobertaTaskModel>(config, task, layout(config, task), init));
  };
  // Positions start after the padding index (fairseq's layout): two rows of the table are never a token's.
  family.max_positions = [](const PretrainedConfig& config) {
    return config.get_int("max_position_embeddings", 512) - config.get_int("pad_token_id", 1) - 1;
  };
  return family;
}

}  // namespace

ModelFamily roberta_family() { return roberta_like_family("roberta", "Roberta"); }

ModelFamily xlm_roberta_family() { return roberta_like_family("xlm-roberta", "XLMRoberta"); }

}  // namespace berth
