// The "bert" family: BertForSequenceClassification, and the per-token heads (token classification, question
// answering, masked LM) on EncoderTaskModel, with BERT's checkpoint layout.
#include "berth/model/bert_family.h"

#include "berth/core/error.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/model/bert_token_heads.h"

#include <torch/nn/module.h>

namespace berth {
namespace {

// BERT's config from a PretrainedConfig: read from the file's own text when there is one (its messages then
// name the file's lines), with the labels as the PretrainedConfig holds them now.
BertConfig bert_config(const PretrainedConfig& config) {
  const std::string source = config.source().empty() ? "BertConfig" : config.source();
  BertConfig bert =
      BertConfig::from_json_text(config.text().empty() ? config.to_json_text() : config.text(), source);
  bert.id2label = config.id2label;
  bert.label2id = config.label2id;
  bert.problem_type = config.problem_type;
  bert.validate();
  return bert;
}

}  // namespace

CheckpointLayout bert_checkpoint_layout(const PretrainedConfig& config, ModelTask task) {
  CheckpointLayout layout;
  layout.architecture = std::string("Bert") + head_suffix(task);
  layout.base_prefix = "bert.";
  // Buffers older transformers saved (persistent then, non-persistent now): HF drops them silently.
  layout.ignored = {"embeddings.position_ids", "embeddings.token_type_ids"};
  layout.head_prefixes = {"classifier."};
  if (task == ModelTask::MaskedLM) {
    // The tied output layer older checkpoints saved beside the word embeddings (and its bias, the head's).
    layout.ignored.insert(layout.ignored.end(),
                          {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"});
    layout.head_prefixes = {"cls."};
  }
  if (task == ModelTask::TokenClassification || task == ModelTask::QuestionAnswering) {
    // Built without the pooler; a checkpoint's pooler (a BertModel's, a classifier's) is dropped silently, as
    // HF's _keys_to_ignore_on_load_unexpected = [r"pooler"] does.
    layout.ignored.insert(layout.ignored.end(), {"pooler.dense.weight", "pooler.dense.bias"});
    if (task == ModelTask::QuestionAnswering) layout.head_prefixes = {"qa_outputs."};
  }
  const double range = config.get_number("initializer_range", 0.02);
  layout.init = [range](torch::nn::Module& module, std::optional<uint64_t> seed) {
    init_bert_weights(module, range, seed);
  };
  return layout;
}

namespace {

std::shared_ptr<TaskModel> build_bert(const PretrainedConfig& config, ModelTask task,
                                      const TaskModelInit& init) {
  if (task == ModelTask::SequenceClassification)
    return BertForSequenceClassification(bert_config(config), BertInitOptions{init.random, init.seed}).ptr();
  if (task == ModelTask::MaskedLM) {
    // berth's masked-LM head always reads the word embeddings: an untied checkpoint would lose its own
    // decoder.
    BERTH_CHECK(
        config.get_bool("tie_word_embeddings", true), config.where("tie_word_embeddings"),
        " is false: BertForMaskedLM with its own output layer, which berth does not implement (it ties "
        "the output layer to the word embeddings, HF's default). Fix: a checkpoint with tied embeddings");
    bert_config(
        config);  // BERT's own reader checks a masked LM's config, as it always has (errors name lines)
  }
  return std::make_shared<BertTokenTaskModel>(config, task, bert_checkpoint_layout(config, task), init);
}

}  // namespace

ModelFamily bert_family() {
  ModelFamily family;
  family.model_type = "bert";
  family.tasks = {ModelTask::SequenceClassification, ModelTask::TokenClassification, ModelTask::MaskedLM,
                  ModelTask::QuestionAnswering};
  family.build = build_bert;
  family.layout = bert_checkpoint_layout;
  return family;
}

}  // namespace berth
