// ELECTRA's model and task heads: BERT's embeddings and layers with the embedding projection between them.
#include "berth/model/electra_model.h"

#include "berth/core/error.h"

#include <torch/torch.h>

namespace berth {
namespace {

// The embeddings' BertConfig: BERT's embedding module at embedding_size.
BertConfig electra_embedding_config(BertConfig config, int64_t embedding_size) {
  config.hidden_size = embedding_size;
  return config;
}

}  // namespace

ElectraModelImpl::ElectraModelImpl(const BertConfig& config, int64_t embedding_size) {
  embeddings =
      register_module("embeddings", BertEmbeddings(electra_embedding_config(config, embedding_size)));
  if (embedding_size != config.hidden_size)
    embeddings_project =
        register_module("embeddings_project", torch::nn::Linear(embedding_size, config.hidden_size));
  encoder = register_module("encoder", BertEncoder(config));
}

ElectraGeneratorPredictionsImpl::ElectraGeneratorPredictionsImpl(const BertConfig& config,
                                                                 int64_t embedding_size) {
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({embedding_size}).eps(config.layer_norm_eps)));
  dense = register_module("dense", torch::nn::Linear(config.hidden_size, embedding_size));
}

at::Tensor ElectraGeneratorPredictionsImpl::forward(const at::Tensor& hidden) {
  return LayerNorm(torch::gelu(linear_as_python(dense, hidden)));
}

ElectraTaskModel::ElectraTaskModel(const PretrainedConfig& config, ModelTask task, CheckpointLayout layout,
                                   const TaskModelInit& init)
    : EncoderTaskModel(config, task, std::move(layout)), bert(bert_layers_config(config, 0)) {
  embedding_size = config.get_int("embedding_size", 128);
  BERTH_CHECK(embedding_size > 0, config.where("embedding_size"), " must be positive, found ", embedding_size,
              ". Fix: use the config.json saved with the weights");
  set_shape({bert.vocab_size, bert.max_position_embeddings, bert.num_hidden_layers, bert.hidden_size});
  electra = register_module("electra", ElectraModel(bert, embedding_size));
  const double classifier_dropout = bert.classifier_dropout_or_default();
  std::vector<std::string> head{"classifier"};
  switch (task) {
    case ModelTask::SequenceClassification:
      sequence_head = register_module(
          "classifier", FirstTokenClassifier(bert.hidden_size, bert.num_labels(), classifier_dropout,
                                             [](const at::Tensor& x) { return torch::gelu(x); }));
      break;
    case ModelTask::TokenClassification:
      dropout = register_module("dropout", torch::nn::Dropout(classifier_dropout));
      linear_head = register_module("classifier", torch::nn::Linear(bert.hidden_size, bert.num_labels()));
      break;
    case ModelTask::MaskedLM:
      if (!config.get_bool("tie_word_embeddings", true))
        config.unsupported("tie_word_embeddings", "false", "generator_lm_head tied to the word embeddings",
                           "set tie_word_embeddings true");
      generator_predictions =
          register_module("generator_predictions", ElectraGeneratorPredictions(bert, embedding_size));
      generator_lm_head = register_module("generator_lm_head", TiedDecoder(bert.vocab_size));
      head = {"generator_predictions", "generator_lm_head"};
      break;
    case ModelTask::QuestionAnswering:
      linear_head = register_module("qa_outputs", torch::nn::Linear(bert.hidden_size, bert.num_labels()));
      head = {"qa_outputs"};
      break;
    case ModelTask::CausalLM:
      BERTH_BUG(false, "ELECTRA built for causal-lm: the family table lists no such head");
  }
  std::vector<std::string> embedding_blocks{"electra.embeddings"};
  if (electra->embeddings_project) embedding_blocks.push_back("electra.embeddings_project");
  std::vector<std::string> layers;
  for (int64_t i = 0; i < bert.num_hidden_layers; ++i)
    layers.push_back("electra.encoder.layer." + std::to_string(i));
  set_blocks(embedding_blocks, layers, head);
  if (init.random) init_encoder_weights(*this, bert.initializer_range, init.seed);
}

at::Tensor ElectraTaskModel::compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                                            const at::Tensor& types) {
  const at::Tensor& words = electra->embeddings->word_embeddings->weight;
  const at::Tensor extended = extended_attention_mask(mask, words.scalar_type());
  at::Tensor hidden = run_block("electra.embeddings", input_ids,
                                [&](const at::Tensor& ids) { return electra->embeddings(ids, types); });
  if (electra->embeddings_project) {
    hidden = run_block("electra.embeddings_project", hidden,
                       [&](const at::Tensor& x) { return linear_as_python(electra->embeddings_project, x); });
  }
  for (size_t i = 0; i < electra->encoder->layer->size(); ++i) {
    auto* layer = electra->encoder->layer[i]->as<BertLayerImpl>();
    hidden = run_layer(i, "electra.encoder.layer." + std::to_string(i), *layer, hidden,
                       [layer, extended](const at::Tensor& x) { return layer->forward(x, extended); });
  }
  switch (task()) {
    case ModelTask::SequenceClassification:
      return run_block("classifier", hidden, [&](const at::Tensor& x) { return sequence_head(x); });
    case ModelTask::TokenClassification:
      return run_block("classifier", dropout(hidden),
                       [&](const at::Tensor& x) { return linear_as_python(linear_head, x); });
    case ModelTask::MaskedLM: {
      const at::Tensor h = run_block("generator_predictions", hidden,
                                     [&](const at::Tensor& x) { return generator_predictions(x); });
      return run_block("generator_lm_head", h, [&](const at::Tensor& x) {
        return run_tied_decoder(x, [&](const at::Tensor& t) { return generator_lm_head(t, words); });
      });
    }
    default:  // question answering: (B, T, 2) start and end logits
      return run_block("qa_outputs", hidden,
                       [&](const at::Tensor& x) { return linear_as_python(linear_head, x); });
  }
}

}  // namespace berth
