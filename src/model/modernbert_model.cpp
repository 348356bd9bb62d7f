// ModernBERT's modules and task heads, as HF's modeling_modernbert computes them in eager attention.
#include "berth/model/modernbert_model.h"

#include "berth/core/error.h"
#include "berth/kernels/scaled_attention.h"
#include "berth/model/encoder_heads.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace berth {
namespace {

Activation modernbert_activation(const PretrainedConfig& config, const std::string& field) {
  const std::string name = config.get_string(field, "gelu");
  try {
    return parse_activation(name);
  } catch (const Error&) {
    config.unsupported(field, "\"" + name + "\"", "gelu, gelu_new, gelu_pytorch_tanh, relu",
                       "use a checkpoint with one of those activations");
  }
}

// layer_types as HF's config makes it: written out, or every global_attn_every_n_layers-th layer global.
std::vector<bool> modernbert_sliding_layers(const PretrainedConfig& config, int64_t layers) {
  std::vector<bool> sliding;
  if (!config.has("layer_types")) {
    const int64_t every = config.get_int("global_attn_every_n_layers", 3);
    BERTH_CHECK(every > 0, config.where("global_attn_every_n_layers"), " must be positive, found ", every,
                ". Fix: use the config.json saved with the weights");
    for (int64_t i = 0; i < layers; ++i) sliding.push_back(i % every != 0);
    return sliding;
  }
  const nlohmann::json types = nlohmann::json::parse(config.get_json("layer_types"));
  BERTH_CHECK(types.is_array() && static_cast<int64_t>(types.size()) == layers, config.where("layer_types"),
              " must list one type per layer (", layers, "), found ", types.dump(),
              ". Fix: use the config.json saved with the weights");
  for (const nlohmann::json& type : types) {
    if (type == "full_attention" || type == "sliding_attention") {
      sliding.push_back(type == "sliding_attention");
      continue;
    }
    config.unsupported("layer_types", type.dump(), "\"full_attention\" and \"sliding_attention\"",
                       "use a ModernBERT checkpoint with those layer types");
  }
  return sliding;
}

// rope_parameters[layer_type]'s theta (a default rope over the whole head only), else the older field.
double modernbert_rope_theta(const PretrainedConfig& config, const std::string& layer_type,
                             const std::string& legacy_field, double fallback) {
  if (config.has("rope_scaling"))
    config.unsupported("rope_scaling", config.get_json("rope_scaling"), "unscaled rotary positions",
                       "remove rope_scaling (ModernBERT checkpoints do not scale their positions)");
  const double legacy = config.get_number(legacy_field, fallback);
  if (!config.has("rope_parameters")) return legacy;
  const nlohmann::json rope = nlohmann::json::parse(config.get_json("rope_parameters"));
  const std::string field = "rope_parameters." + layer_type;
  BERTH_CHECK(rope.is_object(), config.where("rope_parameters"), " must be an object of layer types, found ",
              rope.dump(), ". Fix: write it as transformers saves it");
  if (!rope.contains(layer_type) || rope[layer_type].is_null()) return legacy;
  const nlohmann::json& params = rope[layer_type];
  const std::string type = params.value("rope_type", params.value("type", std::string("default")));
  if (type != "default")
    config.unsupported(field + ".rope_type", "\"" + type + "\"", "the default rope type",
                       "use a checkpoint with default rotary embeddings");
  if (params.contains("partial_rotary_factor") && params["partial_rotary_factor"] != 1.0)
    config.unsupported(field + ".partial_rotary_factor", params["partial_rotary_factor"].dump(),
                       "rotary embeddings over the whole head (1.0)",
                       "use a checkpoint without partial rotary");
  if (!params.contains("rope_theta")) return legacy;
  BERTH_CHECK(params["rope_theta"].is_number(), config.where("rope_parameters"), ".", layer_type,
              ".rope_theta must be a number, found ", params["rope_theta"].dump());
  return params["rope_theta"].get<double>();
}

// Fields that change nothing berth computes are read nowhere; these change it and are refused.
void check_modernbert_support(const PretrainedConfig& config, const ModernBertShape& s) {
  if (config.has("head_dim") && config.get_int("head_dim") != s.head_dim())
    config.unsupported("head_dim", std::to_string(config.get_int("head_dim")),
                       "hidden_size / num_attention_heads (" + std::to_string(s.head_dim()) + ")",
                       "remove head_dim");
  // Sparse prediction only drops the ignored tokens' logits before the same loss: berth keeps them all,
  // which gives HF's loss when the tokens it drops are those the loss ignores (-100).
  if (config.get_bool("sparse_prediction", false) && config.get_int("sparse_pred_ignore_index", -100) != -100)
    config.unsupported("sparse_pred_ignore_index", std::to_string(config.get_int("sparse_pred_ignore_index")),
                       "-100 (the loss's ignore index) with sparse_prediction",
                       "set sparse_pred_ignore_index -100 or sparse_prediction false");
}

void check_modernbert_sizes(const PretrainedConfig& config, const ModernBertShape& s) {
  BERTH_CHECK(
      s.vocab_size > 0 && s.num_hidden_layers > 0 && s.intermediate_size > 0 &&
          s.max_position_embeddings > 0 && s.local_attention >= 0,
      config.where("vocab_size"),
      ": vocab_size, num_hidden_layers, intermediate_size, max_position_embeddings and local_attention "
      "must be positive. Fix: use the config.json saved with the weights");
  BERTH_CHECK(
      s.num_attention_heads > 0 && s.hidden_size % s.num_attention_heads == 0 && s.head_dim() % 2 == 0,
      config.where("num_attention_heads"), " (", s.num_attention_heads, ") must divide hidden_size (",
      s.hidden_size, ") into heads of even size. Fix: use the config.json saved with the weights");
}

void read_modernbert_dropouts_and_flags(const PretrainedConfig& config, ModernBertShape& s) {
  s.norm_eps = config.get_number("norm_eps", s.norm_eps);
  s.norm_bias = config.get_bool("norm_bias", s.norm_bias);
  s.attention_bias = config.get_bool("attention_bias", s.attention_bias);
  s.attention_dropout = config.get_number("attention_dropout", s.attention_dropout);
  s.embedding_dropout = config.get_number("embedding_dropout", s.embedding_dropout);
  s.mlp_bias = config.get_bool("mlp_bias", s.mlp_bias);
  s.mlp_dropout = config.get_number("mlp_dropout", s.mlp_dropout);
  s.decoder_bias = config.get_bool("decoder_bias", s.decoder_bias);
  s.classifier_dropout = config.get_number("classifier_dropout", s.classifier_dropout);
  s.classifier_bias = config.get_bool("classifier_bias", s.classifier_bias);
  s.classifier_activation = modernbert_activation(config, "classifier_activation");
  const std::string pooling = config.get_string("classifier_pooling", "cls");
  if (pooling != "cls" && pooling != "mean")
    config.unsupported("classifier_pooling", "\"" + pooling + "\"", "\"cls\" and \"mean\"",
                       "set classifier_pooling to one of those");
  s.mean_pooling = pooling == "mean";
}

// x (B, H, T, D) rotated in float32 and returned in its own dtype, as HF's apply_rotary_pos_emb.
at::Tensor modernbert_rotate(const at::Tensor& x, const RotaryCosSin& rotary) {
  return apply_rotary(x.to(at::kFloat), rotary).to(x.scalar_type());
}

// torch.nn.init.trunc_normal_(mean 0, std, a = -cutoff * std, b = cutoff * std) drawn on the CPU.
void fill_modernbert_trunc_normal(at::Tensor& target, double std, double cutoff, at::Generator& generator) {
  auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double low = cdf(-cutoff);
  const double high = cdf(cutoff);
  at::Tensor draw = torch::empty(target.sizes(), at::kFloat);
  draw.uniform_(2 * low - 1, 2 * high - 1, generator);
  draw.erfinv_().mul_(std * std::sqrt(2.0)).clamp_(-cutoff * std, cutoff * std);
  target.copy_(draw);
}

bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

ModernBertShape ModernBertShape::from(const PretrainedConfig& config) {
  ModernBertShape s;
  s.vocab_size = config.get_int("vocab_size", s.vocab_size);
  s.hidden_size = config.get_int("hidden_size", s.hidden_size);
  s.intermediate_size = config.get_int("intermediate_size", s.intermediate_size);
  s.num_hidden_layers = config.get_int("num_hidden_layers", s.num_hidden_layers);
  s.num_attention_heads = config.get_int("num_attention_heads", s.num_attention_heads);
  s.hidden_activation = modernbert_activation(config, "hidden_activation");
  s.max_position_embeddings = config.get_int("max_position_embeddings", s.max_position_embeddings);
  s.initializer_range = config.get_number("initializer_range", s.initializer_range);
  s.initializer_cutoff_factor = config.get_optional_number("initializer_cutoff_factor", 2.0).value_or(3.0);
  s.pad_token_id = config.get_optional_int("pad_token_id", s.pad_token_id);
  s.local_attention = config.get_int("local_attention", s.local_attention);
  read_modernbert_dropouts_and_flags(config, s);
  check_modernbert_sizes(config, s);
  check_modernbert_support(config, s);
  s.sliding = modernbert_sliding_layers(config, s.num_hidden_layers);
  s.global_rope_theta = modernbert_rope_theta(config, "full_attention", "global_rope_theta", 160000.0);
  s.local_rope_theta = modernbert_rope_theta(config, "sliding_attention", "local_rope_theta", 10000.0);
  return s;
}

void init_modernbert_weights(torch::nn::Module& module, const ModernBertShape& shape,
                             std::optional<uint64_t> seed) {
  at::Generator generator =
      seed ? at::make_generator<at::CPUGeneratorImpl>(*seed) : at::detail::getDefaultCPUGenerator();
  const double in = shape.initializer_range;
  const double out = shape.initializer_range / std::sqrt(2.0 * static_cast<double>(shape.num_hidden_layers));
  const double final_out = std::pow(static_cast<double>(shape.hidden_size), -0.5);
  torch::NoGradGuard no_grad;
  for (auto& item : module.named_parameters()) {
    const std::string& name = item.key();
    at::Tensor& p = item.value();
    if (ends_with(name, ".bias") || name == "bias") {
      p.zero_();
    } else if (ends_with(name, "norm.weight")) {
      p.fill_(1.0);
    } else if (ends_with(name, "tok_embeddings.weight") || ends_with(name, "Wqkv.weight") ||
               ends_with(name, "Wi.weight")) {
      fill_modernbert_trunc_normal(p, in, shape.initializer_cutoff_factor, generator);
    } else if (ends_with(name, "Wo.weight") || ends_with(name, "dense.weight")) {
      fill_modernbert_trunc_normal(p, out, shape.initializer_cutoff_factor, generator);
    } else {
      BERTH_BUG(ends_with(name, "classifier.weight"), "ModernBERT parameter ", name, " has no init rule");
      fill_modernbert_trunc_normal(p, final_out, shape.initializer_cutoff_factor, generator);
    }
  }
}

ModernBertNormImpl::ModernBertNormImpl(int64_t size, double eps_value, bool with_bias) : eps(eps_value) {
  weight = register_parameter("weight", torch::ones({size}));
  if (with_bias) bias = register_parameter("bias", torch::zeros({size}));
}

at::Tensor ModernBertNormImpl::forward(const at::Tensor& x) {
  return at::layer_norm(x, {weight.size(0)}, weight, bias, eps);
}

ModernBertEmbeddingsImpl::ModernBertEmbeddingsImpl(const ModernBertShape& shape) {
  torch::nn::EmbeddingOptions words(shape.vocab_size, shape.hidden_size);
  if (shape.pad_token_id) words.padding_idx(*shape.pad_token_id);
  tok_embeddings = register_module("tok_embeddings", torch::nn::Embedding(words));
  norm = register_module("norm", ModernBertNorm(shape.hidden_size, shape.norm_eps, shape.norm_bias));
  drop = register_module("drop", torch::nn::Dropout(shape.embedding_dropout));
}

at::Tensor ModernBertEmbeddingsImpl::forward(const at::Tensor& input_ids) {
  return drop(norm(tok_embeddings(input_ids)));
}

ModernBertAttentionImpl::ModernBertAttentionImpl(const ModernBertShape& shape)
    : num_heads(shape.num_attention_heads), dropout_p(shape.attention_dropout) {
  const int64_t c = shape.hidden_size;
  Wqkv = register_module("Wqkv",
                         torch::nn::Linear(torch::nn::LinearOptions(c, 3 * c).bias(shape.attention_bias)));
  Wo = register_module("Wo", torch::nn::Linear(torch::nn::LinearOptions(c, c).bias(shape.attention_bias)));
}

at::Tensor ModernBertAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                            const RotaryCosSin& rotary) {
  const int64_t batch = hidden.size(0);
  const int64_t length = hidden.size(1);
  const int64_t head_dim = hidden.size(2) / num_heads;
  // (B, T, 3C) -> (B, T, 3, H, D); each of q, k, v -> (B, H, T, D)
  const at::Tensor qkv = linear_as_python(Wqkv, hidden).view({batch, length, 3, num_heads, head_dim});
  const at::Tensor q = modernbert_rotate(qkv.select(2, 0).transpose(1, 2), rotary);
  const at::Tensor k = modernbert_rotate(qkv.select(2, 1).transpose(1, 2), rotary);
  const at::Tensor v = qkv.select(2, 2).transpose(1, 2);
  const double scaling = std::pow(static_cast<double>(head_dim), -0.5);
  at::Tensor attended;
  if (!is_training() || dropout_p == 0) {
    // No dropout to apply: torch's fused attention (kernels/scaled_attention.h).
    attended = kernels::scaled_attention(q, k, v, mask, scaling);
  } else {
    const at::Tensor scores = torch::matmul(q, k.transpose(2, 3)) * scaling + mask;
    // HF's eager path: softmax in float32, back to the query's dtype.
    const at::Tensor probs = torch::softmax(scores, -1, at::kFloat).to(q.scalar_type());
    attended = torch::matmul(torch::dropout(probs, dropout_p, true), v);
  }
  // (B, H, T, D) -> (B, T, H, D) -> (B, T, C)
  const at::Tensor context = attended.transpose(1, 2).contiguous().reshape({batch, length, -1});
  return torch::dropout(linear_as_python(Wo, context), dropout_p, is_training());
}

ModernBertMLPImpl::ModernBertMLPImpl(const ModernBertShape& shape) : activation(shape.hidden_activation) {
  const int64_t c = shape.hidden_size;
  const int64_t inner = shape.intermediate_size;
  Wi = register_module("Wi", torch::nn::Linear(torch::nn::LinearOptions(c, 2 * inner).bias(shape.mlp_bias)));
  drop = register_module("drop", torch::nn::Dropout(shape.mlp_dropout));
  Wo = register_module("Wo", torch::nn::Linear(torch::nn::LinearOptions(inner, c).bias(shape.mlp_bias)));
}

at::Tensor ModernBertMLPImpl::forward(const at::Tensor& x) {
  // (B, T, 2I) -> input, gate (B, T, I) each
  const std::vector<at::Tensor> halves = linear_as_python(Wi, x).chunk(2, -1);
  return linear_as_python(Wo, drop(apply_activation(activation, halves[0]) * halves[1]));
}

ModernBertEncoderLayerImpl::ModernBertEncoderLayerImpl(const ModernBertShape& shape, int64_t index) {
  if (index > 0)
    attn_norm =
        register_module("attn_norm", ModernBertNorm(shape.hidden_size, shape.norm_eps, shape.norm_bias));
  attn = register_module("attn", ModernBertAttention(shape));
  mlp_norm = register_module("mlp_norm", ModernBertNorm(shape.hidden_size, shape.norm_eps, shape.norm_bias));
  mlp = register_module("mlp", ModernBertMLP(shape));
}

at::Tensor ModernBertEncoderLayerImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                               const RotaryCosSin& rotary) {
  const at::Tensor normed = attn_norm ? attn_norm(hidden) : hidden;
  const at::Tensor attended = hidden + attn(normed, mask, rotary);
  return attended + mlp(mlp_norm(attended));
}

ModernBertModelImpl::ModernBertModelImpl(const ModernBertShape& shape) {
  embeddings = register_module("embeddings", ModernBertEmbeddings(shape));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < shape.num_hidden_layers; ++i) layers->push_back(ModernBertEncoderLayer(shape, i));
  final_norm =
      register_module("final_norm", ModernBertNorm(shape.hidden_size, shape.norm_eps, shape.norm_bias));
}

ModernBertPredictionHeadImpl::ModernBertPredictionHeadImpl(const ModernBertShape& shape)
    : activation(shape.classifier_activation) {
  const int64_t c = shape.hidden_size;
  dense =
      register_module("dense", torch::nn::Linear(torch::nn::LinearOptions(c, c).bias(shape.classifier_bias)));
  norm = register_module("norm", ModernBertNorm(c, shape.norm_eps, shape.norm_bias));
}

at::Tensor ModernBertPredictionHeadImpl::forward(const at::Tensor& x) {
  return norm(apply_activation(activation, linear_as_python(dense, x)));
}

ModernBertDecoderImpl::ModernBertDecoderImpl(int64_t vocab_size, bool with_bias) {
  if (with_bias) bias = register_parameter("bias", torch::zeros({vocab_size}));
}

at::Tensor ModernBertDecoderImpl::forward(const at::Tensor& x, const at::Tensor& word_embeddings) {
  return at::linear(x, word_embeddings, bias);
}

namespace {

RotaryEmbedding modernbert_rotary(const ModernBertShape& shape, double theta) {
  RopeParameters rope;
  rope.rope_theta = theta;
  rope.head_dim = shape.head_dim();
  rope.max_position_embeddings = shape.max_position_embeddings;
  return RotaryEmbedding(rope);
}

// HF's eager masks, 0 where attended and finfo(dtype).min elsewhere: padding keys are never attended; a
// local layer also drops keys farther than local_attention / 2 from the query. mask (B, T) -> global
// (B, 1, 1, T) and local (B, 1, T, T).
std::pair<at::Tensor, at::Tensor> modernbert_masks(const at::Tensor& mask, int64_t half_window,
                                                   c10::ScalarType dtype) {
  double lowest = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "modernbert_masks", [&] {
    lowest = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
  });
  const int64_t length = mask.size(1);
  const auto options = torch::TensorOptions().dtype(dtype).device(mask.device());
  const at::Tensor zero = torch::zeros({}, options);
  const at::Tensor masked = torch::full({}, lowest, options);
  const at::Tensor keys = mask.to(at::kBool).view({mask.size(0), 1, 1, length});
  const at::Tensor positions =
      torch::arange(length, torch::TensorOptions().dtype(at::kLong).device(mask.device()));
  const at::Tensor band = (positions.unsqueeze(1) - positions.unsqueeze(0)).abs() <= half_window;  // (T, T)
  return {torch::where(keys, zero, masked), torch::where(keys & band, zero, masked)};
}

}  // namespace

ModernBertTaskModel::ModernBertTaskModel(const PretrainedConfig& config, ModelTask task,
                                         CheckpointLayout layout, const TaskModelInit& init)
    : EncoderTaskModel(config, task, std::move(layout)),
      shape(ModernBertShape::from(config)),
      global_rotary_(modernbert_rotary(shape, shape.global_rope_theta)),
      local_rotary_(modernbert_rotary(shape, shape.local_rope_theta)) {
  set_shape({shape.vocab_size, shape.max_position_embeddings, shape.num_hidden_layers, shape.hidden_size});
  model = register_module("model", ModernBertModel(shape));
  head = register_module("head", ModernBertPredictionHead(shape));
  std::vector<std::string> head_blocks{"head", "classifier"};
  if (task == ModelTask::MaskedLM) {
    if (!config.get_bool("tie_word_embeddings", true))
      config.unsupported("tie_word_embeddings", "false", "decoder tied to the token embeddings",
                         "set tie_word_embeddings true");
    decoder = register_module("decoder", ModernBertDecoder(shape.vocab_size, shape.decoder_bias));
    // A decoder without bias holds no tensor of its own: no block.
    head_blocks =
        shape.decoder_bias ? std::vector<std::string>{"head", "decoder"} : std::vector<std::string>{"head"};
  } else {
    BERTH_BUG(task != ModelTask::CausalLM,
              "ModernBERT built for causal-lm: the family table lists no such head");
    drop = register_module("drop", torch::nn::Dropout(shape.classifier_dropout));
    classifier = register_module("classifier", torch::nn::Linear(shape.hidden_size, config.num_labels()));
  }
  std::vector<std::string> layers;
  for (int64_t i = 0; i < shape.num_hidden_layers; ++i) layers.push_back("model.layers." + std::to_string(i));
  layers.push_back("model.final_norm");
  set_blocks({"model.embeddings"}, layers, head_blocks);
  if (init.random) init_modernbert_weights(*this, shape, init.seed);
}

at::Tensor ModernBertTaskModel::compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                                               const at::Tensor& /*types: ModernBERT has none*/) {
  const at::Tensor hidden =
      run_block("model.embeddings", input_ids, [&](const at::Tensor& ids) { return model->embeddings(ids); });
  return run_head(run_layers(hidden, mask), mask);
}

at::Tensor ModernBertTaskModel::run_layers(const at::Tensor& embedded, const at::Tensor& mask) {
  const int64_t length = embedded.size(1);
  const auto [global_mask, local_mask] =
      modernbert_masks(mask, shape.local_attention / 2, embedded.scalar_type());
  const RotaryCosSin global = global_rotary_.forward(length, embedded.scalar_type(), embedded.device());
  const RotaryCosSin local = local_rotary_.forward(length, embedded.scalar_type(), embedded.device());
  at::Tensor hidden = embedded;
  for (size_t i = 0; i < model->layers->size(); ++i) {
    auto* layer = model->layers[i]->as<ModernBertEncoderLayerImpl>();
    const bool sliding = shape.sliding[i];
    const at::Tensor& layer_mask = sliding ? local_mask : global_mask;
    const RotaryCosSin& rotary = sliding ? local : global;
    hidden = run_layer(
        i, "model.layers." + std::to_string(i), *layer, hidden,
        [layer, layer_mask, rotary](const at::Tensor& x) { return layer->forward(x, layer_mask, rotary); });
  }
  return run_block("model.final_norm", hidden, [&](const at::Tensor& x) { return model->final_norm(x); });
}

at::Tensor ModernBertTaskModel::run_head(const at::Tensor& hidden, const at::Tensor& mask) {
  auto head_block = [&](const at::Tensor& x) {
    return run_block("head", x, [&](const at::Tensor& in) { return head(in); });
  };
  auto classify = [&](const at::Tensor& x) {
    return run_block("classifier", drop(x),
                     [&](const at::Tensor& in) { return linear_as_python(classifier, in); });
  };
  switch (task()) {
    case ModelTask::SequenceClassification: {
      // (B, T, C) -> (B, C): the first token, or the mean over the attended tokens.
      const at::Tensor pooled = shape.mean_pooling
                                    ? (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, /*keepdim=*/true)
                                    : hidden.select(1, 0);
      return classify(head_block(pooled));
    }
    case ModelTask::MaskedLM: {
      // The decoder reads the token embeddings again: a second use of their block, inside the decoder's.
      const at::Tensor& words = model->embeddings->tok_embeddings->weight;
      auto decode = [&](const at::Tensor& x) {
        return run_tied_decoder(x, [&](const at::Tensor& in) { return decoder(in, words); });
      };
      const at::Tensor transformed = head_block(hidden);
      return shape.decoder_bias ? run_block("decoder", transformed, decode) : decode(transformed);
    }
    default:  // token classification (B, T, labels); question answering (B, T, 2) start and end logits
      return classify(head_block(hidden));
  }
}

}  // namespace berth
