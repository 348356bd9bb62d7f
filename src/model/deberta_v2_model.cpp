// DeBERTa-v2/v3's model and task heads: transformers' modeling_deberta_v2 arithmetic in berth's modules.
#include "berth/model/deberta_v2_model.h"

#include "berth/core/error.h"
#include "berth/model/encoder_heads.h"

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace berth {
namespace {

// pos_att_type: a list (["p2c", "c2p"]) or HF's older "p2c|c2p" text.
void read_pos_att_type(const PretrainedConfig& config, DebertaV2Config& out) {
  if (!config.has("pos_att_type")) return;
  const nlohmann::json value = nlohmann::json::parse(config.get_json("pos_att_type"));
  std::vector<std::string> kinds;
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    for (size_t start = 0; start <= text.size();) {
      const size_t bar = std::min(text.find('|', start), text.size());
      kinds.push_back(text.substr(start, bar - start));
      start = bar + 1;
    }
  } else if (value.is_array()) {
    for (const auto& kind : value)
      if (kind.is_string()) kinds.push_back(kind.get<std::string>());
  } else if (!value.is_null()) {
    config.unsupported("pos_att_type", value.dump(), "a list of \"c2p\" and \"p2c\"",
                       "write e.g. \"pos_att_type\": [\"p2c\", \"c2p\"]");
  }
  for (std::string kind : kinds) {
    kind.erase(0, kind.find_first_not_of(' '));
    kind.erase(kind.find_last_not_of(' ') + 1);
    if (kind == "c2p")
      out.c2p = true;
    else if (kind == "p2c")
      out.p2c = true;
    else if (!kind.empty())
      config.unsupported("pos_att_type", "\"" + kind + "\"", "\"c2p\" and \"p2c\"",
                         "keep only c2p and p2c in pos_att_type");
  }
}

// The BERT-named fields DeBERTa's layers share with BERT's (type_vocab_size may be 0 here).
BertConfig deberta_layers_config(const PretrainedConfig& config) {
  BertConfig bert;
  bert.vocab_size = config.get_int("vocab_size", 128100);
  bert.hidden_size = config.get_int("hidden_size", 1536);
  bert.num_hidden_layers = config.get_int("num_hidden_layers", 24);
  bert.num_attention_heads = config.get_int("num_attention_heads", 24);
  bert.intermediate_size = config.get_int("intermediate_size", 6144);
  bert.hidden_act = config.get_string("hidden_act", "gelu");
  try {
    parse_activation(bert.hidden_act);
  } catch (const Error&) {
    config.unsupported("hidden_act", "\"" + bert.hidden_act + "\"", "gelu, gelu_new, gelu_pytorch_tanh, relu",
                       "use a checkpoint with one of those activations");
  }
  bert.hidden_dropout_prob = config.get_number("hidden_dropout_prob", 0.1);
  bert.attention_probs_dropout_prob = config.get_number("attention_probs_dropout_prob", 0.1);
  bert.max_position_embeddings = config.get_int("max_position_embeddings", 512);
  bert.type_vocab_size = config.get_int("type_vocab_size", 0);
  bert.initializer_range = config.get_number("initializer_range", 0.02);
  bert.layer_norm_eps = config.get_number("layer_norm_eps", 1e-7);
  bert.pad_token_id = config.get_optional_int("pad_token_id", 0);
  bert.id2label = config.id2label;
  bert.label2id = config.label2id;
  BERTH_CHECK(bert.hidden_size > 0 && bert.num_attention_heads > 0 &&
                  bert.hidden_size % bert.num_attention_heads == 0,
              config.where("hidden_size"), ": hidden_size ", bert.hidden_size,
              " must be a positive multiple of num_attention_heads ", bert.num_attention_heads,
              ". Fix: use the config.json saved with the weights");
  return bert;
}

// conv_act / pooler_hidden_act: HF's ACT2FN names berth computes.
at::Tensor deberta_activation(const std::string& name, const at::Tensor& x) {
  if (name == "tanh") return torch::tanh(x);
  return apply_activation(parse_activation(name), x);
}

}  // namespace

DebertaV2Config read_deberta_v2_config(const PretrainedConfig& config) {
  DebertaV2Config c;
  c.layers = deberta_layers_config(config);
  c.embedding_size = config.get_int("embedding_size", c.layers.hidden_size);
  c.position_biased_input = config.get_bool("position_biased_input", true);
  c.relative_attention = config.get_bool("relative_attention", false);
  c.max_relative_positions = config.get_int("max_relative_positions", -1);
  if (c.max_relative_positions < 1) c.max_relative_positions = c.layers.max_position_embeddings;
  c.position_buckets = config.get_int("position_buckets", -1);
  read_pos_att_type(config, c);
  c.share_att_key = config.get_bool("share_att_key", false);
  const std::string norm = config.get_string("norm_rel_ebd", "none");
  c.norm_rel_ebd = norm.find("layer_norm") != std::string::npos;
  c.conv_kernel_size = config.get_int("conv_kernel_size", 0);
  c.conv_groups = config.get_int("conv_groups", 1);
  c.conv_act = config.get_string("conv_act", "tanh");
  c.pooler_dropout = config.get_number("pooler_dropout", 0.0);
  c.pooler_hidden_act = config.get_string("pooler_hidden_act", "gelu");
  for (const std::string& act : {c.conv_act, c.pooler_hidden_act})
    if (act != "tanh") {
      try {
        parse_activation(act);
      } catch (const Error&) {
        config.unsupported(act == c.conv_act ? "conv_act" : "pooler_hidden_act", "\"" + act + "\"",
                           "tanh, gelu, gelu_new, gelu_pytorch_tanh, relu", "use one of those activations");
      }
    }
  c.cls_dropout =
      config.get_optional_number("cls_dropout", std::nullopt).value_or(c.layers.hidden_dropout_prob);
  c.legacy = config.get_bool("legacy", true);
  const int64_t pooler_size = config.get_int("pooler_hidden_size", c.layers.hidden_size);
  if (pooler_size != c.layers.hidden_size)
    config.unsupported("pooler_hidden_size", std::to_string(pooler_size),
                       "hidden_size (" + std::to_string(c.layers.hidden_size) +
                           "): HF's classifier reads the pooler's output at hidden_size",
                       "set pooler_hidden_size to hidden_size");
  return c;
}

at::Tensor deberta_relative_positions(int64_t length, int64_t bucket_size, int64_t max_position,
                                      const at::Device& device) {
  const auto ids = torch::arange(length, torch::TensorOptions().dtype(at::kLong).device(device));
  at::Tensor relative = ids.unsqueeze(1) - ids.unsqueeze(0);  // (T, T): query - key
  if (bucket_size > 0 && max_position > 0) {
    // HF's make_log_bucket_position, in its float32 arithmetic.
    const int64_t mid = bucket_size / 2;
    const at::Tensor sign = torch::sign(relative);
    const at::Tensor inside = (relative < mid) & (relative > -mid);
    const at::Tensor abs_pos = torch::where(inside, torch::full_like(relative, mid - 1), relative.abs());
    const at::Tensor log_base =
        torch::log(torch::tensor(static_cast<float>(static_cast<double>(max_position - 1) / mid)));
    const at::Tensor log_pos =
        torch::ceil(torch::log(abs_pos.to(at::kFloat) / mid) / log_base.to(device) * (mid - 1)) + mid;
    relative = torch::where(abs_pos <= mid, relative.to(at::kFloat), log_pos * sign).to(at::kLong);
  }
  return relative.unsqueeze(0);
}

DebertaV2EmbeddingsImpl::DebertaV2EmbeddingsImpl(const DebertaV2Config& config) {
  const BertConfig& c = config.layers;
  auto words = torch::nn::EmbeddingOptions(c.vocab_size, config.embedding_size);
  if (c.pad_token_id) words.padding_idx(*c.pad_token_id);
  word_embeddings = register_module("word_embeddings", torch::nn::Embedding(words));
  if (config.position_biased_input)
    position_embeddings = register_module(
        "position_embeddings", torch::nn::Embedding(c.max_position_embeddings, config.embedding_size));
  if (c.type_vocab_size > 0)
    token_type_embeddings = register_module("token_type_embeddings",
                                            torch::nn::Embedding(c.type_vocab_size, config.embedding_size));
  if (config.embedding_size != c.hidden_size)
    embed_proj = register_module(
        "embed_proj",
        torch::nn::Linear(torch::nn::LinearOptions(config.embedding_size, c.hidden_size).bias(false)));
  LayerNorm = register_module(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps)));
  dropout = register_module("dropout", torch::nn::Dropout(c.hidden_dropout_prob));
}

at::Tensor DebertaV2EmbeddingsImpl::forward(const at::Tensor& ids, const at::Tensor& types,
                                            const at::Tensor& mask) {
  at::Tensor embeddings = word_embeddings(ids);
  if (position_embeddings) {
    const at::Tensor positions = torch::arange(ids.size(1), ids.options()).unsqueeze(0);
    embeddings = embeddings + position_embeddings(positions);
  }
  if (token_type_embeddings) embeddings = embeddings + token_type_embeddings(types);
  if (embed_proj) embeddings = embed_proj(embeddings);
  embeddings = LayerNorm(embeddings);
  embeddings = embeddings * mask.unsqueeze(2).to(embeddings.scalar_type());
  return dropout(embeddings);
}

DisentangledSelfAttentionImpl::DisentangledSelfAttentionImpl(const DebertaV2Config& c) : config(c) {
  const int64_t hidden = c.layers.hidden_size;
  num_heads = c.layers.num_attention_heads;
  query_proj = register_module("query_proj", torch::nn::Linear(hidden, hidden));
  key_proj = register_module("key_proj", torch::nn::Linear(hidden, hidden));
  value_proj = register_module("value_proj", torch::nn::Linear(hidden, hidden));
  if (c.relative_attention) {
    pos_dropout = register_module("pos_dropout", torch::nn::Dropout(c.layers.hidden_dropout_prob));
    if (!c.share_att_key && c.c2p)
      pos_key_proj = register_module("pos_key_proj", torch::nn::Linear(hidden, hidden));
    if (!c.share_att_key && c.p2c)
      pos_query_proj = register_module("pos_query_proj", torch::nn::Linear(hidden, hidden));
  }
  dropout = register_module("dropout", torch::nn::Dropout(c.layers.attention_probs_dropout_prob));
}

namespace {

// x: (B, T, H*D) -> (B, H, T, D)
at::Tensor deberta_heads(const at::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1}).permute({0, 2, 1, 3});
}

}  // namespace

at::Tensor DisentangledSelfAttentionImpl::relative_scores(const at::Tensor& q, const at::Tensor& k,
                                                          const at::Tensor& relative_pos,
                                                          const at::Tensor& rel, double scale) const {
  const int64_t span = config.attention_span();
  const int64_t batch = q.size(0), length = q.size(2);
  const std::vector<int64_t> index_shape{batch, num_heads, length, length};
  at::Tensor score = torch::zeros({}, q.options());
  if (config.c2p) {
    // content-to-position: each query against the key's relative position embedding.
    const at::Tensor pos_key = deberta_heads(
        config.share_att_key ? linear_as_python(key_proj, rel) : linear_as_python(pos_key_proj, rel),
        num_heads);
    const at::Tensor c2p = torch::matmul(q, pos_key.transpose(-1, -2));  // (B, H, T, 2 span)
    const at::Tensor index =
        torch::clamp(relative_pos + span, 0, span * 2 - 1).unsqueeze(1).expand(index_shape);
    score = score + torch::gather(c2p, -1, index) / scale;
  }
  if (config.p2c) {
    // position-to-content: each key against the query's relative position embedding, transposed.
    const at::Tensor pos_query = deberta_heads(
        config.share_att_key ? linear_as_python(query_proj, rel) : linear_as_python(pos_query_proj, rel),
        num_heads);
    const at::Tensor p2c = torch::matmul(k, pos_query.transpose(-1, -2));  // (B, H, T, 2 span)
    const at::Tensor index =
        torch::clamp(-relative_pos + span, 0, span * 2 - 1).unsqueeze(1).expand(index_shape);
    score = score + torch::gather(p2c, -1, index).transpose(-1, -2) / scale;
  }
  return score;
}

at::Tensor DisentangledSelfAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                                  const at::Tensor& relative_pos,
                                                  const at::Tensor& rel_embeddings) {
  const at::Tensor q = deberta_heads(query_proj(hidden), num_heads);
  const at::Tensor k = deberta_heads(key_proj(hidden), num_heads);
  const at::Tensor v = deberta_heads(value_proj(hidden), num_heads);
  const int64_t scale_factor = 1 + (config.c2p ? 1 : 0) + (config.p2c ? 1 : 0);
  // HF's sqrt of a float32 tensor, then the key scaled before the product.
  const double scale =
      torch::sqrt(torch::tensor(static_cast<float>(q.size(-1) * scale_factor))).item<float>();
  at::Tensor scores = torch::matmul(q, k.transpose(-1, -2) / scale);
  if (config.relative_attention) {
    const int64_t span = config.attention_span();
    const at::Tensor rel = pos_dropout(rel_embeddings).slice(0, 0, span * 2).unsqueeze(0);
    scores = scores + relative_scores(q, k, relative_pos, rel, scale);
  }
  // HF's torch.finfo(dtype).min of the scores' own dtype (bf16 under autocast).
  double lowest = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, scores.scalar_type(), "deberta_mask", [&] {
    lowest = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
  });
  scores = scores.masked_fill(mask.logical_not(), lowest);
  const at::Tensor probs = dropout(torch::softmax(scores, -1));
  const at::Tensor context = torch::matmul(probs, v);  // (B, H, T, D)
  return context.permute({0, 2, 1, 3}).reshape({hidden.size(0), hidden.size(1), -1});
}

DebertaV2AttentionImpl::DebertaV2AttentionImpl(const DebertaV2Config& config) {
  self = register_module("self", DisentangledSelfAttention(config));
  output = register_module("output", BertResidualOutput(config.layers.hidden_size, config.layers));
}

at::Tensor DebertaV2AttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                           const at::Tensor& relative_pos, const at::Tensor& rel_embeddings) {
  return output(self(hidden, mask, relative_pos, rel_embeddings), hidden);
}

DebertaV2LayerImpl::DebertaV2LayerImpl(const DebertaV2Config& config) {
  attention = register_module("attention", DebertaV2Attention(config));
  intermediate = register_module("intermediate", BertIntermediate(config.layers));
  output = register_module("output", BertResidualOutput(config.layers.intermediate_size, config.layers));
}

at::Tensor DebertaV2LayerImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                       const at::Tensor& relative_pos, const at::Tensor& rel_embeddings) {
  const at::Tensor attended = attention(hidden, mask, relative_pos, rel_embeddings);
  return output(intermediate(attended), attended);
}

DebertaV2ConvLayerImpl::DebertaV2ConvLayerImpl(const DebertaV2Config& config) : act(config.conv_act) {
  const int64_t hidden = config.layers.hidden_size;
  const int64_t kernel = config.conv_kernel_size;
  conv = register_module("conv", torch::nn::Conv1d(torch::nn::Conv1dOptions(hidden, hidden, kernel)
                                                       .padding((kernel - 1) / 2)
                                                       .groups(config.conv_groups)));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden}).eps(config.layers.layer_norm_eps)));
  dropout = register_module("dropout", torch::nn::Dropout(config.layers.hidden_dropout_prob));
}

at::Tensor DebertaV2ConvLayerImpl::forward(const at::Tensor& embeddings, const at::Tensor& layer_output,
                                           const at::Tensor& mask) {
  at::Tensor out = conv(embeddings.permute({0, 2, 1}).contiguous()).permute({0, 2, 1});
  out = out.masked_fill((mask == 0).unsqueeze(-1), 0);
  out = deberta_activation(act, dropout(out));
  return LayerNorm(layer_output + out) * mask.unsqueeze(2).to(out.scalar_type());
}

DebertaV2EncoderImpl::DebertaV2EncoderImpl(const DebertaV2Config& config) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.layers.num_hidden_layers; ++i) layer->push_back(DebertaV2Layer(config));
  const int64_t hidden = config.layers.hidden_size;
  if (config.relative_attention)
    rel_embeddings =
        register_module("rel_embeddings", torch::nn::Embedding(config.attention_span() * 2, hidden));
  if (config.norm_rel_ebd)
    LayerNorm = register_module(
        "LayerNorm",
        torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden}).eps(config.layers.layer_norm_eps)));
  if (config.conv_kernel_size > 0) conv = register_module("conv", DebertaV2ConvLayer(config));
}

at::Tensor DebertaV2EncoderImpl::rel_embedding_table() {
  if (!rel_embeddings) return {};
  return LayerNorm ? LayerNorm(rel_embeddings->weight) : rel_embeddings->weight;
}

DebertaV2ModelImpl::DebertaV2ModelImpl(const DebertaV2Config& config) {
  embeddings = register_module("embeddings", DebertaV2Embeddings(config));
  encoder = register_module("encoder", DebertaV2Encoder(config));
}

DebertaV2ContextPoolerImpl::DebertaV2ContextPoolerImpl(const DebertaV2Config& config)
    : act(config.pooler_hidden_act) {
  const int64_t hidden = config.layers.hidden_size;
  dense = register_module("dense", torch::nn::Linear(hidden, hidden));
  dropout = register_module("dropout", torch::nn::Dropout(config.pooler_dropout));
}

at::Tensor DebertaV2ContextPoolerImpl::forward(const at::Tensor& hidden) {
  return deberta_activation(act, dense(dropout(hidden.select(1, 0))));
}

DebertaV2LmHeadImpl::DebertaV2LmHeadImpl(const DebertaV2Config& config, bool legacy)
    : activation(parse_activation(config.layers.hidden_act)) {
  const int64_t hidden = config.layers.hidden_size;
  const int64_t width = legacy ? config.embedding_size : hidden;
  dense = torch::nn::Linear(hidden, width);
  LayerNorm = torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(config.layers.layer_norm_eps));
  // Legacy: cls.predictions.transform.{dense,LayerNorm} and cls.predictions.bias; else lm_head.{...}.
  if (legacy) {
    auto transform = register_module("transform", std::make_shared<torch::nn::Module>());
    transform->register_module("dense", dense);
    transform->register_module("LayerNorm", LayerNorm);
  } else {
    register_module("dense", dense);
    register_module("LayerNorm", LayerNorm);
  }
  bias = register_parameter("bias", torch::zeros({config.layers.vocab_size}));
}

at::Tensor DebertaV2LmHeadImpl::forward(const at::Tensor& hidden, const at::Tensor& word_embeddings) {
  const at::Tensor h = LayerNorm(apply_activation(activation, dense(hidden)));
  return at::linear(h, word_embeddings, bias);
}

DebertaV2TaskModel::DebertaV2TaskModel(const PretrainedConfig& config, ModelTask task,
                                       CheckpointLayout layout, const TaskModelInit& init)
    : EncoderTaskModel(config, task, std::move(layout)), deberta_config(read_deberta_v2_config(config)) {
  const BertConfig& c = deberta_config.layers;
  set_shape({c.vocab_size, c.max_position_embeddings, c.num_hidden_layers, c.hidden_size});
  deberta = register_module("deberta", DebertaV2Model(deberta_config));
  register_head(task);
  std::vector<std::string> embeddings{"deberta.embeddings"};
  if (deberta->encoder->rel_embeddings) embeddings.push_back("deberta.encoder.rel_embeddings");
  if (deberta->encoder->LayerNorm) embeddings.push_back("deberta.encoder.LayerNorm");
  std::vector<std::string> layers;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layers.push_back("deberta.encoder.layer." + std::to_string(i));
    if (i == 0 && deberta->encoder->conv) layers.push_back("deberta.encoder.conv");  // HF runs it here
  }
  std::vector<std::string> head;
  switch (task) {
    case ModelTask::SequenceClassification:
      head.insert(head.end(), {"pooler", "classifier"});
      break;
    case ModelTask::TokenClassification:
      head.push_back("classifier");
      break;
    case ModelTask::MaskedLM:
      head.push_back(lm_block);
      break;
    default:
      head.push_back("qa_outputs");
  }
  set_blocks(embeddings, layers, head);
  if (init.random) init_encoder_weights(*this, c.initializer_range, init.seed);
}

void DebertaV2TaskModel::register_head(ModelTask task) {
  const BertConfig& c = deberta_config.layers;
  switch (task) {
    case ModelTask::SequenceClassification:
      pooler = register_module("pooler", DebertaV2ContextPooler(deberta_config));
      dropout = register_module("dropout", torch::nn::Dropout(deberta_config.cls_dropout));
      linear_head = register_module("classifier", torch::nn::Linear(c.hidden_size, c.num_labels()));
      return;
    case ModelTask::TokenClassification:
      dropout = register_module("dropout", torch::nn::Dropout(c.hidden_dropout_prob));
      linear_head = register_module("classifier", torch::nn::Linear(c.hidden_size, c.num_labels()));
      return;
    case ModelTask::MaskedLM: {
      const bool legacy = deberta_config.legacy;
      BERTH_CHECK(legacy || deberta_config.embedding_size == c.hidden_size, config().where("legacy"),
                  " false ties lm_predictions to word embeddings of width embedding_size ",
                  deberta_config.embedding_size, ", but its dense layer is hidden_size ", c.hidden_size,
                  " wide (HF fails there too). Fix: set legacy true, or embedding_size to hidden_size");
      lm_block = legacy ? "cls" : "lm_predictions";
      auto holder = register_module(lm_block, std::make_shared<torch::nn::Module>());
      lm_head = holder->register_module(legacy ? "predictions" : "lm_head",
                                        DebertaV2LmHead(deberta_config, legacy));
      return;
    }
    case ModelTask::QuestionAnswering:
      linear_head = register_module("qa_outputs", torch::nn::Linear(c.hidden_size, c.num_labels()));
      return;
    case ModelTask::CausalLM:
      BERTH_BUG(false, "DeBERTa-v2 built for causal-lm: the family table lists no such head");
  }
}

at::Tensor DebertaV2TaskModel::encode(const at::Tensor& input_ids, const at::Tensor& mask,
                                      const at::Tensor& types) {
  DebertaV2EncoderImpl& encoder = *deberta->encoder;
  const at::Tensor embedded = run_block("deberta.embeddings", input_ids, [&](const at::Tensor& ids) {
    return deberta->embeddings(ids, types, mask);
  });
  at::Tensor rel;
  if (encoder.rel_embeddings) {
    rel = run_block("deberta.encoder.rel_embeddings", embedded,
                    [&](const at::Tensor&) { return encoder.rel_embeddings->weight * 1; });
    if (encoder.LayerNorm)
      rel = run_block("deberta.encoder.LayerNorm", rel,
                      [&](const at::Tensor& x) { return encoder.LayerNorm(x); });
  }
  // HF's get_attention_mask: query i attends to key j when both are tokens.
  const at::Tensor keep = mask.to(at::kBool);
  const at::Tensor pair_mask = (keep.unsqueeze(1) & keep.unsqueeze(2)).unsqueeze(1);  // (B, 1, T, T)
  const at::Tensor positions =
      deberta_config.relative_attention
          ? deberta_relative_positions(input_ids.size(1), deberta_config.position_buckets,
                                       deberta_config.max_relative_positions, input_ids.device())
          : at::Tensor();
  at::Tensor hidden = embedded;
  for (size_t i = 0; i < encoder.layer->size(); ++i) {
    auto* layer = encoder.layer[i]->as<DebertaV2LayerImpl>();
    hidden = run_layer(i, "deberta.encoder.layer." + std::to_string(i), *layer, hidden,
                       [layer, pair_mask, positions, rel](const at::Tensor& x) {
                         return layer->forward(x, pair_mask, positions, rel);
                       });
    if (i == 0 && encoder.conv)
      hidden = run_block("deberta.encoder.conv", hidden,
                         [&](const at::Tensor& x) { return encoder.conv(embedded, x, mask); });
  }
  return hidden;
}

at::Tensor DebertaV2TaskModel::head_logits(const at::Tensor& hidden) {
  switch (task()) {
    case ModelTask::SequenceClassification: {
      const at::Tensor pooled = run_block("pooler", hidden, [&](const at::Tensor& x) { return pooler(x); });
      return run_block("classifier", dropout(pooled),
                       [&](const at::Tensor& x) { return linear_as_python(linear_head, x); });
    }
    case ModelTask::TokenClassification:
      return run_block("classifier", dropout(hidden),
                       [&](const at::Tensor& x) { return linear_as_python(linear_head, x); });
    case ModelTask::MaskedLM: {
      const at::Tensor& words = deberta->embeddings->word_embeddings->weight;
      return run_block(lm_block, hidden, [&](const at::Tensor& x) {
        return run_tied_decoder(x, [&](const at::Tensor& t) { return lm_head(t, words); });
      });
    }
    default:  // question answering: (B, T, 2) start and end logits
      return run_block("qa_outputs", hidden,
                       [&](const at::Tensor& x) { return linear_as_python(linear_head, x); });
  }
}

at::Tensor DebertaV2TaskModel::compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                                              const at::Tensor& types) {
  return head_logits(encode(input_ids, mask, types));
}

}  // namespace berth
