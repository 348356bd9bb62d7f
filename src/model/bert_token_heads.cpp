// BertForTokenClassification / BertForQuestionAnswering / BertForMaskedLM: BERT's layers without the pooler,
// then a head on every token's state.
#include "berth/model/bert_token_heads.h"

#include "berth/core/error.h"
#include "berth/model/encoder_heads.h"

#include <torch/torch.h>

namespace berth {

BertTokenTaskModel::BertTokenTaskModel(const PretrainedConfig& config, ModelTask task,
                                       CheckpointLayout layout, const TaskModelInit& init)
    : EncoderTaskModel(config, task, std::move(layout)), bert_config(bert_layers_config(config, 0)) {
  BERTH_BUG(task == ModelTask::TokenClassification || task == ModelTask::QuestionAnswering ||
                task == ModelTask::MaskedLM,
            "BertTokenTaskModel built for ", task_name(task));
  set_shape({bert_config.vocab_size, bert_config.max_position_embeddings, bert_config.num_hidden_layers,
             bert_config.hidden_size});
  bert = register_module("bert", BertModel(bert_config, BertInitOptions{false, std::nullopt},
                                           /*add_pooling_layer=*/false));
  head_block = task == ModelTask::TokenClassification ? "classifier"
               : task == ModelTask::QuestionAnswering ? "qa_outputs"
                                                      : "cls";
  if (task == ModelTask::TokenClassification)
    dropout = register_module("dropout", torch::nn::Dropout(bert_config.classifier_dropout_or_default()));
  if (task == ModelTask::MaskedLM)
    cls = register_module("cls", BertOnlyMlmHead(bert_config));
  else
    head = register_module(head_block, torch::nn::Linear(bert_config.hidden_size, bert_config.num_labels()));
  std::vector<std::string> layers;
  for (int64_t i = 0; i < bert_config.num_hidden_layers; ++i)
    layers.push_back("bert.encoder.layer." + std::to_string(i));
  set_blocks({"bert.embeddings"}, layers, {head_block});
  if (init.random) init_encoder_weights(*this, bert_config.initializer_range, init.seed);
}

at::Tensor BertTokenTaskModel::compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                                              const at::Tensor& types) {
  const at::Tensor extended =
      extended_attention_mask(mask, bert->embeddings->word_embeddings->weight.scalar_type());
  at::Tensor hidden = run_block("bert.embeddings", input_ids,
                                [&](const at::Tensor& ids) { return bert->embeddings(ids, types); });
  for (size_t i = 0; i < bert->encoder->layer->size(); ++i) {
    auto* layer = bert->encoder->layer[i]->as<BertLayerImpl>();
    hidden = run_layer(i, "bert.encoder.layer." + std::to_string(i), *layer, hidden,
                       [layer, extended](const at::Tensor& x) { return layer->forward(x, extended); });
  }
  if (!cls) {
    return run_block(head_block, hidden,
                     [&](const at::Tensor& x) { return linear_as_python(head, dropout ? dropout(x) : x); });
  }
  // The tied output layer reads the word embeddings again: a second use of their block, inside "cls" (which
  // holds the bias).
  BertLmPredictionHeadImpl& predictions = *cls->predictions;
  const at::Tensor& words = bert->embeddings->word_embeddings->weight;
  return run_block("cls", hidden, [&](const at::Tensor& x) {
    return run_tied_decoder(predictions.transform(x), [&](const at::Tensor& states) {
      return torch::nn::functional::linear(states, words, predictions.bias);
    });
  });
}

}  // namespace berth
