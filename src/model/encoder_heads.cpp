// Shared encoder pieces: BertConfig from a RoBERTa/ELECTRA config, nn.Linear's arithmetic, the first-token
// classification head.
#include "berth/model/encoder_heads.h"

#include "berth/core/error.h"
#include "berth/model/bert_model.h"

#include <torch/torch.h>

#include <utility>

namespace berth {

BertConfig bert_layers_config(const PretrainedConfig& config, int64_t default_pad_token_id) {
  if (config.get_bool("is_decoder", false))
    config.unsupported("is_decoder", "true", "bidirectional encoders only (is_decoder false)",
                       "use the model as an encoder, or a causal-lm family for generation");
  if (config.get_bool("add_cross_attention", false))
    config.unsupported("add_cross_attention", "true", "no cross-attention", "set add_cross_attention false");
  const std::string position_type = config.get_string("position_embedding_type", "absolute");
  if (position_type != "absolute")
    config.unsupported("position_embedding_type", "\"" + position_type + "\"", "\"absolute\"",
                       "use a checkpoint with absolute position embeddings");
  BertConfig bert;
  bert.vocab_size = config.get_int("vocab_size");
  bert.hidden_size = config.get_int("hidden_size", 768);
  bert.num_hidden_layers = config.get_int("num_hidden_layers", 12);
  bert.num_attention_heads = config.get_int("num_attention_heads", 12);
  bert.intermediate_size = config.get_int("intermediate_size", 3072);
  bert.hidden_act = config.get_string("hidden_act", "gelu");
  try {
    parse_activation(bert.hidden_act);
  } catch (const Error&) {
    config.unsupported("hidden_act", "\"" + bert.hidden_act + "\"", "gelu, gelu_new, gelu_pytorch_tanh, relu",
                       "use a checkpoint with one of those activations");
  }
  bert.hidden_dropout_prob = config.get_number("hidden_dropout_prob", 0.1);
  bert.attention_probs_dropout_prob = config.get_number("attention_probs_dropout_prob", 0.1);
  bert.classifier_dropout = config.get_optional_number("classifier_dropout", std::nullopt);
  bert.max_position_embeddings = config.get_int("max_position_embeddings", 512);
  bert.type_vocab_size = config.get_int("type_vocab_size", 2);
  bert.initializer_range = config.get_number("initializer_range", 0.02);
  bert.layer_norm_eps = config.get_number("layer_norm_eps", 1e-12);
  bert.pad_token_id = config.get_optional_int("pad_token_id", default_pad_token_id);
  bert.id2label = config.id2label;
  bert.label2id = config.label2id;
  bert.validate();
  return bert;
}

at::Tensor linear_as_python(const torch::nn::Linear& layer, const at::Tensor& x) {
  return at::linear(x, layer->weight, layer->bias);
}

FirstTokenClassifierImpl::FirstTokenClassifierImpl(int64_t hidden_size, int64_t num_labels, double dropout_p,
                                                   std::function<at::Tensor(const at::Tensor&)> act)
    : activation(std::move(act)) {
  dense = register_module("dense", torch::nn::Linear(hidden_size, hidden_size));
  dropout = register_module("dropout", torch::nn::Dropout(dropout_p));
  out_proj = register_module("out_proj", torch::nn::Linear(hidden_size, num_labels));
}

at::Tensor FirstTokenClassifierImpl::forward(const at::Tensor& hidden) {
  at::Tensor x = dropout(hidden.select(1, 0));  // (B, C): the <s> / [CLS] token
  x = dropout(activation(linear_as_python(dense, x)));
  return linear_as_python(out_proj, x);
}

TiedDecoderImpl::TiedDecoderImpl(int64_t vocab_size) {
  bias = register_parameter("bias", torch::zeros({vocab_size}));
}

at::Tensor TiedDecoderImpl::forward(const at::Tensor& x, const at::Tensor& word_embeddings) {
  return at::linear(x, word_embeddings, bias);
}

}  // namespace berth
