// RoBERTa's modules and task heads: padding-offset position ids, BERT's layers, HF's heads and losses.
#include "berth/model/roberta_model.h"

#include "berth/core/error.h"

#include <torch/torch.h>

namespace berth {

at::Tensor roberta_position_ids(const at::Tensor& input_ids, int64_t padding_idx) {
  // (B, T): 1 on real tokens; the running count times the mask leaves pads at 0, then everything shifts by
  // padding_idx.
  const at::Tensor mask = input_ids.ne(padding_idx).to(at::kLong);
  return at::cumsum(mask, 1) * mask + padding_idx;
}

RobertaEmbeddingsImpl::RobertaEmbeddingsImpl(const BertConfig& config)
    : padding_idx(config.pad_token_id.value_or(1)) {
  word_embeddings = register_module(
      "word_embeddings",
      torch::nn::Embedding(
          torch::nn::EmbeddingOptions(config.vocab_size, config.hidden_size).padding_idx(padding_idx)));
  // HF gives the position table the padding row too (it is where pad tokens look up).
  position_embeddings = register_module(
      "position_embeddings",
      torch::nn::Embedding(torch::nn::EmbeddingOptions(config.max_position_embeddings, config.hidden_size)
                               .padding_idx(padding_idx)));
  token_type_embeddings = register_module("token_type_embeddings",
                                          torch::nn::Embedding(config.type_vocab_size, config.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size}).eps(config.layer_norm_eps)));
  dropout = register_module("dropout", torch::nn::Dropout(config.hidden_dropout_prob));
}

at::Tensor RobertaEmbeddingsImpl::forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids) {
  at::Tensor embeddings = word_embeddings(input_ids) + token_type_embeddings(token_type_ids);
  embeddings = embeddings + position_embeddings(roberta_position_ids(input_ids, padding_idx));
  return dropout(LayerNorm(embeddings));
}

RobertaModelImpl::RobertaModelImpl(const BertConfig& config) {
  embeddings = register_module("embeddings", RobertaEmbeddings(config));
  encoder = register_module("encoder", BertEncoder(config));
}

RobertaLMHeadImpl::RobertaLMHeadImpl(const BertConfig& config) {
  dense = register_module("dense", torch::nn::Linear(config.hidden_size, config.hidden_size));
  layer_norm = register_module(
      "layer_norm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size}).eps(config.layer_norm_eps)));
  bias = register_parameter("bias", torch::zeros({config.vocab_size}));
}

at::Tensor RobertaLMHeadImpl::forward(const at::Tensor& hidden, const at::Tensor& word_embeddings) {
  return decode(transform(hidden), word_embeddings);
}

at::Tensor RobertaLMHeadImpl::transform(const at::Tensor& hidden) {
  return layer_norm(torch::gelu(linear_as_python(dense, hidden)));
}

at::Tensor RobertaLMHeadImpl::decode(const at::Tensor& x, const at::Tensor& word_embeddings) {
  return at::linear(x, word_embeddings, bias);
}

RobertaTaskModel::RobertaTaskModel(const PretrainedConfig& config, ModelTask task, CheckpointLayout layout,
                                   const TaskModelInit& init)
    : EncoderTaskModel(config, task, std::move(layout)), bert(bert_layers_config(config, 1)) {
  const int64_t padding_idx = bert.pad_token_id.value_or(1);
  BERTH_CHECK(bert.max_position_embeddings > padding_idx + 1, config.where("max_position_embeddings"), " (",
              bert.max_position_embeddings, ") leaves no position after the padding offset ", padding_idx + 1,
              ". Fix: use the config.json saved with the weights");
  set_shape({bert.vocab_size, bert.max_position_embeddings - padding_idx - 1, bert.num_hidden_layers,
             bert.hidden_size});
  roberta = register_module("roberta", RobertaModel(bert));
  const double classifier_dropout = bert.classifier_dropout_or_default();
  switch (task) {
    case ModelTask::SequenceClassification:
      sequence_head = register_module(
          "classifier", FirstTokenClassifier(bert.hidden_size, bert.num_labels(), classifier_dropout,
                                             [](const at::Tensor& x) { return torch::tanh(x); }));
      break;
    case ModelTask::TokenClassification:
      dropout = register_module("dropout", torch::nn::Dropout(classifier_dropout));
      linear_head = register_module("classifier", torch::nn::Linear(bert.hidden_size, bert.num_labels()));
      break;
    case ModelTask::MaskedLM:
      if (!config.get_bool("tie_word_embeddings", true))
        config.unsupported("tie_word_embeddings", "false", "the MLM decoder tied to the word embeddings",
                           "set tie_word_embeddings true");
      lm_head = register_module("lm_head", RobertaLMHead(bert));
      break;
    case ModelTask::QuestionAnswering:
      linear_head = register_module("qa_outputs", torch::nn::Linear(bert.hidden_size, bert.num_labels()));
      break;
    case ModelTask::CausalLM:
      BERTH_BUG(false, "RoBERTa built for causal-lm: the family table lists no such head");
  }
  std::vector<std::string> layers;
  for (int64_t i = 0; i < bert.num_hidden_layers; ++i)
    layers.push_back("roberta.encoder.layer." + std::to_string(i));
  head_block = task == ModelTask::MaskedLM            ? "lm_head"
               : task == ModelTask::QuestionAnswering ? "qa_outputs"
                                                      : "classifier";
  set_blocks({"roberta.embeddings"}, layers, {head_block});
  if (init.random) init_encoder_weights(*this, bert.initializer_range, init.seed);
}

at::Tensor RobertaTaskModel::compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                                            const at::Tensor& types) {
  const at::Tensor& words = roberta->embeddings->word_embeddings->weight;
  const at::Tensor extended = extended_attention_mask(mask, words.scalar_type());
  at::Tensor hidden = run_block("roberta.embeddings", input_ids,
                                [&](const at::Tensor& ids) { return roberta->embeddings(ids, types); });
  for (size_t i = 0; i < roberta->encoder->layer->size(); ++i) {
    auto* layer = roberta->encoder->layer[i]->as<BertLayerImpl>();
    hidden = run_layer(i, "roberta.encoder.layer." + std::to_string(i), *layer, hidden,
                       [layer, extended](const at::Tensor& x) { return layer->forward(x, extended); });
  }
  return run_block(head_block, hidden, [&](const at::Tensor& x) {
    switch (task()) {
      case ModelTask::SequenceClassification:
        return sequence_head(x);
      case ModelTask::TokenClassification:
        return linear_as_python(linear_head, dropout(x));
      case ModelTask::MaskedLM:
        return run_tied_decoder(lm_head->transform(x),
                                [&](const at::Tensor& t) { return lm_head->decode(t, words); });
      default:
        return linear_as_python(linear_head, x);  // (B, T, 2): start and end logits
    }
  });
}

}  // namespace berth
