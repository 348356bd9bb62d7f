// DistilBERT's modules and task heads, as HF's modeling_distilbert computes them.
#include "berth/model/distilbert_model.h"

#include "berth/core/error.h"
#include "berth/kernels/scaled_attention.h"

#include <torch/torch.h>

#include <cmath>

namespace berth {
namespace {

torch::nn::LayerNorm distilbert_layer_norm(int64_t dim) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(kDistilBertLayerNormEps));
}

}  // namespace

DistilBertShape DistilBertShape::from(const PretrainedConfig& config) {
  if (config.get_bool("sinusoidal_pos_embds", false))
    config.unsupported("sinusoidal_pos_embds", "true",
                       "learned position embeddings (sinusoidal_pos_embds false)",
                       "use a checkpoint trained with learned position embeddings");
  DistilBertShape s;
  s.vocab_size = config.get_int("vocab_size", s.vocab_size);
  s.dim = config.get_int("dim", s.dim);
  s.n_layers = config.get_int("n_layers", s.n_layers);
  s.n_heads = config.get_int("n_heads", s.n_heads);
  s.hidden_dim = config.get_int("hidden_dim", s.hidden_dim);
  s.dropout = config.get_number("dropout", s.dropout);
  s.attention_dropout = config.get_number("attention_dropout", s.attention_dropout);
  const std::string activation = config.get_string("activation", "gelu");
  try {
    s.activation = parse_activation(activation);
  } catch (const Error&) {
    config.unsupported("activation", "\"" + activation + "\"", "gelu, gelu_new, gelu_pytorch_tanh, relu",
                       "use a checkpoint with one of those activations");
  }
  s.qa_dropout = config.get_number("qa_dropout", s.qa_dropout);
  s.seq_classif_dropout = config.get_number("seq_classif_dropout", s.seq_classif_dropout);
  s.max_position_embeddings = config.get_int("max_position_embeddings", s.max_position_embeddings);
  s.pad_token_id = config.get_optional_int("pad_token_id", s.pad_token_id);
  s.initializer_range = config.get_number("initializer_range", s.initializer_range);
  BERTH_CHECK(s.vocab_size > 0 && s.n_layers > 0 && s.hidden_dim > 0 && s.max_position_embeddings > 0,
              config.where("vocab_size"),
              ": vocab_size, n_layers, hidden_dim and max_position_embeddings must "
              "be positive. Fix: use the config.json saved with the weights");
  BERTH_CHECK(s.n_heads > 0 && s.dim > 0 && s.dim % s.n_heads == 0, config.where("n_heads"), " (", s.n_heads,
              ") must divide dim (", s.dim, "). Fix: use the config.json saved with the weights");
  return s;
}

DistilBertEmbeddingsImpl::DistilBertEmbeddingsImpl(const DistilBertShape& shape) {
  torch::nn::EmbeddingOptions words(shape.vocab_size, shape.dim);
  if (shape.pad_token_id) words.padding_idx(*shape.pad_token_id);
  word_embeddings = register_module("word_embeddings", torch::nn::Embedding(words));
  position_embeddings =
      register_module("position_embeddings", torch::nn::Embedding(shape.max_position_embeddings, shape.dim));
  LayerNorm = register_module("LayerNorm", distilbert_layer_norm(shape.dim));
  dropout = register_module("dropout", torch::nn::Dropout(shape.dropout));
}

at::Tensor DistilBertEmbeddingsImpl::forward(const at::Tensor& input_ids) {
  // (1, T): positions 0..T-1 broadcast over the batch, as HF's position_ids[:, :T].
  const at::Tensor positions =
      torch::arange(input_ids.size(1), input_ids.options().dtype(at::kLong)).unsqueeze(0);
  return dropout(LayerNorm(word_embeddings(input_ids) + position_embeddings(positions)));
}

DistilBertSelfAttentionImpl::DistilBertSelfAttentionImpl(const DistilBertShape& shape)
    : n_heads(shape.n_heads) {
  q_lin = register_module("q_lin", torch::nn::Linear(shape.dim, shape.dim));
  k_lin = register_module("k_lin", torch::nn::Linear(shape.dim, shape.dim));
  v_lin = register_module("v_lin", torch::nn::Linear(shape.dim, shape.dim));
  out_lin = register_module("out_lin", torch::nn::Linear(shape.dim, shape.dim));
  dropout = register_module("dropout", torch::nn::Dropout(shape.attention_dropout));
}

at::Tensor DistilBertSelfAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& extended_mask) {
  const int64_t batch = hidden.size(0);
  const int64_t length = hidden.size(1);
  const int64_t head_size = hidden.size(2) / n_heads;
  // (B, T, dim) -> (B, H, T, D)
  auto split_heads = [&](const torch::nn::Linear& lin) {
    return linear_as_python(lin, hidden).view({batch, length, n_heads, head_size}).transpose(1, 2);
  };
  const at::Tensor q = split_heads(q_lin);
  const at::Tensor k = split_heads(k_lin);
  const at::Tensor v = split_heads(v_lin);
  // HF multiplies by head_size^-0.5 (BERT's path divides by the square root).
  const double scaling = std::pow(static_cast<double>(head_size), -0.5);
  // No dropout to apply: torch's fused attention (kernels/scaled_attention.h).
  const at::Tensor attended =
      !is_training() || dropout->options.p() == 0
          ? kernels::scaled_attention(q, k, v, extended_mask, scaling)
          : torch::matmul(
                dropout(torch::softmax(torch::matmul(q, k.transpose(2, 3)) * scaling + extended_mask, -1)),
                v);
  // (B, H, T, D) -> (B, T, H, D) -> (B, T, dim)
  const at::Tensor context = attended.transpose(1, 2).contiguous().reshape({batch, length, -1});
  return linear_as_python(out_lin, context);
}

DistilBertFFNImpl::DistilBertFFNImpl(const DistilBertShape& shape) : activation(shape.activation) {
  dropout = register_module("dropout", torch::nn::Dropout(shape.dropout));
  lin1 = register_module("lin1", torch::nn::Linear(shape.dim, shape.hidden_dim));
  lin2 = register_module("lin2", torch::nn::Linear(shape.hidden_dim, shape.dim));
}

at::Tensor DistilBertFFNImpl::forward(const at::Tensor& x) {
  return dropout(linear_as_python(lin2, apply_activation(activation, linear_as_python(lin1, x))));
}

DistilBertBlockImpl::DistilBertBlockImpl(const DistilBertShape& shape) {
  attention = register_module("attention", DistilBertSelfAttention(shape));
  sa_layer_norm = register_module("sa_layer_norm", distilbert_layer_norm(shape.dim));
  ffn = register_module("ffn", DistilBertFFN(shape));
  output_layer_norm = register_module("output_layer_norm", distilbert_layer_norm(shape.dim));
}

at::Tensor DistilBertBlockImpl::forward(const at::Tensor& hidden, const at::Tensor& extended_mask) {
  const at::Tensor attended = sa_layer_norm(attention(hidden, extended_mask) + hidden);
  return output_layer_norm(ffn(attended) + attended);
}

DistilBertTransformerImpl::DistilBertTransformerImpl(const DistilBertShape& shape) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < shape.n_layers; ++i) layer->push_back(DistilBertBlock(shape));
}

DistilBertModelImpl::DistilBertModelImpl(const DistilBertShape& shape) {
  embeddings = register_module("embeddings", DistilBertEmbeddings(shape));
  transformer = register_module("transformer", DistilBertTransformer(shape));
}

DistilBertTaskModel::DistilBertTaskModel(const PretrainedConfig& config, ModelTask task,
                                         CheckpointLayout layout, const TaskModelInit& init)
    : EncoderTaskModel(config, task, std::move(layout)), shape(DistilBertShape::from(config)) {
  set_shape({shape.vocab_size, shape.max_position_embeddings, shape.n_layers, shape.dim});
  distilbert = register_module("distilbert", DistilBertModel(shape));
  std::vector<std::string> head{"classifier"};
  switch (task) {
    case ModelTask::SequenceClassification:
      pre_classifier = register_module("pre_classifier", torch::nn::Linear(shape.dim, shape.dim));
      linear_head = register_module("classifier", torch::nn::Linear(shape.dim, config.num_labels()));
      dropout = register_module("dropout", torch::nn::Dropout(shape.seq_classif_dropout));
      head = {"pre_classifier", "classifier"};
      break;
    case ModelTask::TokenClassification:
      dropout = register_module("dropout", torch::nn::Dropout(shape.dropout));
      linear_head = register_module("classifier", torch::nn::Linear(shape.dim, config.num_labels()));
      break;
    case ModelTask::MaskedLM:
      if (!config.get_bool("tie_word_embeddings", true))
        config.unsupported("tie_word_embeddings", "false", "vocab_projector tied to the word embeddings",
                           "set tie_word_embeddings true");
      vocab_transform = register_module("vocab_transform", torch::nn::Linear(shape.dim, shape.dim));
      vocab_layer_norm = register_module("vocab_layer_norm", distilbert_layer_norm(shape.dim));
      vocab_projector = register_module("vocab_projector", TiedDecoder(shape.vocab_size));
      head = {"vocab_transform", "vocab_layer_norm", "vocab_projector"};
      break;
    case ModelTask::QuestionAnswering:
      linear_head = register_module("qa_outputs", torch::nn::Linear(shape.dim, config.num_labels()));
      dropout = register_module("dropout", torch::nn::Dropout(shape.qa_dropout));
      head = {"qa_outputs"};
      break;
    case ModelTask::CausalLM:
      BERTH_BUG(false, "DistilBERT built for causal-lm: the family table lists no such head");
  }
  std::vector<std::string> layers;
  for (int64_t i = 0; i < shape.n_layers; ++i)
    layers.push_back("distilbert.transformer.layer." + std::to_string(i));
  set_blocks({"distilbert.embeddings"}, layers, head);
  if (init.random) init_encoder_weights(*this, shape.initializer_range, init.seed);
}

at::Tensor DistilBertTaskModel::compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                                               const at::Tensor& /*types: DistilBERT has none*/) {
  const at::Tensor& words = distilbert->embeddings->word_embeddings->weight;
  const at::Tensor extended = extended_attention_mask(mask, words.scalar_type());
  at::Tensor hidden = run_block("distilbert.embeddings", input_ids,
                                [&](const at::Tensor& ids) { return distilbert->embeddings(ids); });
  for (size_t i = 0; i < distilbert->transformer->layer->size(); ++i) {
    auto* block = distilbert->transformer->layer[i]->as<DistilBertBlockImpl>();
    hidden = run_layer(i, "distilbert.transformer.layer." + std::to_string(i), *block, hidden,
                       [block, extended](const at::Tensor& x) { return block->forward(x, extended); });
  }
  auto linear_block = [&](const char* name, torch::nn::Linear& layer, const at::Tensor& x) {
    return run_block(name, x, [&](const at::Tensor& in) { return linear_as_python(layer, in); });
  };
  switch (task()) {
    case ModelTask::SequenceClassification: {
      // (B, T, dim) -> (B, dim): the [CLS] token through pre_classifier and ReLU.
      const at::Tensor pooled =
          torch::relu(linear_block("pre_classifier", pre_classifier, hidden.select(1, 0)));
      return linear_block("classifier", linear_head, dropout(pooled));
    }
    case ModelTask::MaskedLM: {
      at::Tensor h =
          apply_activation(shape.activation, linear_block("vocab_transform", vocab_transform, hidden));
      h = run_block("vocab_layer_norm", h, [&](const at::Tensor& x) { return vocab_layer_norm(x); });
      return run_block("vocab_projector", h, [&](const at::Tensor& x) {
        return run_tied_decoder(x, [&](const at::Tensor& t) { return vocab_projector(t, words); });
      });
    }
    case ModelTask::TokenClassification:
      return linear_block("classifier", linear_head, dropout(hidden));
    default:  // question answering: (B, T, 2) start and end logits
      return linear_block("qa_outputs", linear_head, dropout(hidden));
  }
}

}  // namespace berth
