// The RoBERTa and XLM-RoBERTa family entries: their heads, checkpoint names and position limit.
#include "berth/model/roberta_family.h"

#include "berth/model/encoder_family.h"
#include "berth/model/roberta_model.h"

#include <memory>
#include <string>

namespace berth {
namespace {

// The two families differ only in model_type and HF's class names (XLMRoberta<Head> vs Roberta<Head>).
ModelFamily roberta_like_family(const std::string& model_type, const std::string& class_prefix) {
  // Non-persistent buffers older checkpoints hold, and the MLM decoder tied to the word embeddings and to
  // lm_head.bias (HF saves neither).
  ModelFamily family = encoder_family(
      {model_type,
       class_prefix,
       "roberta.",
       {"embeddings.position_ids", "embeddings.token_type_ids", "lm_head.decoder.weight",
        "lm_head.decoder.bias"},
       {"classifier.", "qa_outputs.", "lm_head."}},
      [](const PretrainedConfig& config, ModelTask task, const CheckpointLayout& layout,
         const TaskModelInit& init) {
        return std::shared_ptr<TaskModel>(std::make_shared<RobertaTaskModel>(config, task, layout, init));
      });
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
