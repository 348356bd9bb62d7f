// Llama, Mistral and Qwen2 in libtorch as HF's modeling files compute them in eager attention: RMSNorm
// pre-norm blocks, rotary positions, grouped-query attention, SwiGLU, the causal (or banded) mask with
// padding.
#include "berth/model/llama_model.h"

#include "berth/core/error.h"
#include "berth/kernels/scaled_attention.h"
#include "berth/model/activation_checkpoint.h"
#include "berth/model/input_checks.h"
#include "berth/placement/batch_check.h"

#include <torch/torch.h>

#include <cmath>

namespace berth {
namespace {

// As Python's nn.Linear: at::linear (bias inside the GEMM), not libtorch's F::linear.
at::Tensor llama_linear(const torch::nn::Linear& layer, const at::Tensor& x) {
  return at::linear(x, layer->weight, layer->bias.defined() ? layer->bias : at::Tensor());
}

torch::nn::Linear llama_linear_layer(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

// HF's repeat_kv: (B, KV, T, D) -> (B, KV * groups, T, D), each key/value head serving `groups` query heads.
at::Tensor llama_repeat_kv(const at::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const int64_t b = x.size(0), kv = x.size(1), t = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, kv, groups, t, d}).reshape({b, kv * groups, t, d});
}

// Per-family differences: class names, biases, the sliding window.
void read_llama_family_fields(const PretrainedConfig& config, LlamaSettings& s) {
  if (s.model_type == "llama") {
    s.class_prefix = "Llama";
    s.qkv_bias = s.o_bias = config.get_bool("attention_bias", false);
    s.mlp_bias = config.get_bool("mlp_bias", false);
  } else if (s.model_type == "mistral") {
    s.class_prefix = "Mistral";
    s.sliding_window = config.get_optional_int("sliding_window", 4096);
  } else if (s.model_type == "qwen2") {
    s.class_prefix = "Qwen2";
    s.qkv_bias = true;
    if (config.get_bool("use_sliding_window", false))
      config.unsupported("use_sliding_window", "true", "Qwen2 with full attention in every layer",
                         "use a checkpoint with use_sliding_window false");
    const std::string layer_types = config.get_json("layer_types");
    if (layer_types.find("sliding_attention") != std::string::npos)
      config.unsupported("layer_types", layer_types, "Qwen2 with full_attention in every layer",
                         "use a checkpoint without sliding-attention layers");
  } else {
    BERTH_BUG(false, "LlamaSettings for model_type ", s.model_type);
  }
}

}  // namespace

LlamaSettings LlamaSettings::read(const PretrainedConfig& config) {
  LlamaSettings s;
  s.model_type = config.model_type();
  s.vocab_size = config.get_int("vocab_size");
  s.hidden_size = config.get_int("hidden_size");
  s.intermediate_size = config.get_int("intermediate_size");
  s.num_hidden_layers = config.get_int("num_hidden_layers");
  s.num_attention_heads = config.get_int("num_attention_heads");
  BERTH_CHECK(s.num_attention_heads > 0 && s.hidden_size > 0, config.where("num_attention_heads"), " is ",
              s.num_attention_heads, " with hidden_size ", s.hidden_size, "; both must be positive");
  s.num_key_value_heads =
      config.get_optional_int("num_key_value_heads", std::nullopt).value_or(s.num_attention_heads);
  s.head_dim =
      config.get_optional_int("head_dim", std::nullopt).value_or(s.hidden_size / s.num_attention_heads);
  s.max_position_embeddings = config.get_int("max_position_embeddings", s.max_position_embeddings);
  s.activation =
      parse_decoder_activation(config.get_string("hidden_act", "silu"), config.where("hidden_act"));
  s.rms_norm_eps = config.get_number("rms_norm_eps", s.rms_norm_eps);
  s.initializer_range = config.get_number("initializer_range", s.initializer_range);
  s.attention_dropout = config.get_number("attention_dropout", 0.0);
  s.tie_word_embeddings = config.get_bool("tie_word_embeddings", false);
  s.pad_token_id = config.get_optional_int("pad_token_id", std::nullopt);
  read_llama_family_fields(config, s);
  BERTH_CHECK(s.num_key_value_heads > 0 && s.num_attention_heads % s.num_key_value_heads == 0,
              config.where("num_key_value_heads"), " is ", s.num_key_value_heads,
              "; it must divide num_attention_heads = ", s.num_attention_heads,
              " (each key/value head serves a whole group of query heads). Fix: correct config.json");
  BERTH_CHECK(s.head_dim > 0 && s.head_dim % 2 == 0, config.where("head_dim"), " is ", s.head_dim,
              "; rotary embeddings need an even, positive head size. Fix: correct config.json");
  if (s.sliding_window)
    BERTH_CHECK(*s.sliding_window > 0, config.where("sliding_window"), " is ", *s.sliding_window,
                "; it must be positive or null. Fix: correct config.json");
  s.rope = read_rope_parameters(config, s.head_dim);
  return s;
}

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaSettings& s)
    : num_heads(s.num_attention_heads),
      num_key_value_heads(s.num_key_value_heads),
      head_dim(s.head_dim),
      dropout(s.attention_dropout) {
  q_proj = register_module("q_proj", llama_linear_layer(s.hidden_size, num_heads * head_dim, s.qkv_bias));
  k_proj = register_module("k_proj",
                           llama_linear_layer(s.hidden_size, num_key_value_heads * head_dim, s.qkv_bias));
  v_proj = register_module("v_proj",
                           llama_linear_layer(s.hidden_size, num_key_value_heads * head_dim, s.qkv_bias));
  o_proj = register_module("o_proj", llama_linear_layer(num_heads * head_dim, s.hidden_size, s.o_bias));
}

at::Tensor LlamaAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                       const RotaryCosSin& rotary) {
  const int64_t batch = hidden.size(0);
  const int64_t length = hidden.size(1);
  // (B, T, heads * D) -> (B, heads, T, D)
  auto heads = [&](const at::Tensor& x) { return x.view({batch, length, -1, head_dim}).transpose(1, 2); };
  at::Tensor q = apply_rotary(heads(llama_linear(q_proj, hidden)), rotary);
  at::Tensor k = apply_rotary(heads(llama_linear(k_proj, hidden)), rotary);
  at::Tensor v = heads(llama_linear(v_proj, hidden));
  const int64_t groups = num_heads / num_key_value_heads;
  k = llama_repeat_kv(k, groups);
  v = llama_repeat_kv(v, groups);
  const double scaling = std::pow(static_cast<double>(head_dim), -0.5);
  at::Tensor attended;
  if (!is_training() || dropout == 0) {
    // No dropout to apply: torch's fused attention (kernels/scaled_attention.h), float32 accumulation inside.
    attended = kernels::scaled_attention(q, k, v, mask, scaling);
  } else {
    // (B, H, T, T): scaled scores plus the additive mask, softmax in float32 as HF
    at::Tensor weights = torch::matmul(q, k.transpose(2, 3)) * scaling;
    weights = torch::softmax(weights + mask, -1, at::kFloat).to(q.scalar_type());
    attended = torch::matmul(torch::dropout(weights, dropout, true), v);
  }
  at::Tensor out = attended.transpose(1, 2).contiguous().reshape({batch, length, -1});
  return llama_linear(o_proj, out);
}

LlamaMLPImpl::LlamaMLPImpl(const LlamaSettings& s) : activation(s.activation) {
  gate_proj =
      register_module("gate_proj", llama_linear_layer(s.hidden_size, s.intermediate_size, s.mlp_bias));
  up_proj = register_module("up_proj", llama_linear_layer(s.hidden_size, s.intermediate_size, s.mlp_bias));
  down_proj =
      register_module("down_proj", llama_linear_layer(s.intermediate_size, s.hidden_size, s.mlp_bias));
}

at::Tensor LlamaMLPImpl::forward(const at::Tensor& x) {
  at::Tensor gated =
      apply_decoder_activation(activation, llama_linear(gate_proj, x)) * llama_linear(up_proj, x);
  return llama_linear(down_proj, gated);
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaSettings& s) {
  self_attn = register_module("self_attn", LlamaAttention(s));
  mlp = register_module("mlp", LlamaMLP(s));
  input_layernorm = register_module("input_layernorm", RMSNorm(s.hidden_size, s.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", RMSNorm(s.hidden_size, s.rms_norm_eps));
}

at::Tensor LlamaDecoderLayerImpl::forward(const at::Tensor& hidden, const at::Tensor& mask,
                                          const RotaryCosSin& rotary) {
  at::Tensor attended = hidden + self_attn(input_layernorm(hidden), mask, rotary);
  return attended + mlp(post_attention_layernorm(attended));
}

LlamaModelImpl::LlamaModelImpl(const LlamaSettings& llama_settings)
    : settings(llama_settings), rotary(llama_settings.rope) {
  torch::nn::EmbeddingOptions words(settings.vocab_size, settings.hidden_size);
  // HF's LlamaModel passes pad_token_id as padding_idx: that row gets no gradient.
  if (settings.pad_token_id) words.padding_idx(*settings.pad_token_id);
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(words));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < settings.num_hidden_layers; ++i) layers->push_back(LlamaDecoderLayer(settings));
  norm = register_module("norm", RMSNorm(settings.hidden_size, settings.rms_norm_eps));
}

at::Tensor LlamaModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                   LayerHooks* hooks) {
  const std::string name = settings.class_prefix + "Model";
  // Rotary positions have no table to run past (HF takes longer inputs too; dynamic RoPE is made for them),
  // so the length is not bounded here.
  check_token_inputs({name, settings.vocab_size, std::nullopt}, input_ids,
                     {{"attention_mask", attention_mask}});
  check_batch({{"input_ids", input_ids}, {"attention_mask", attention_mask}}, embed_tokens->weight.device());
  const int64_t batch = input_ids.size(0);
  const int64_t length = input_ids.size(1);
  at::Tensor hidden = run_hook_block(hooks, "model.embed_tokens", input_ids,
                                     [&](const at::Tensor& ids) { return embed_tokens(ids); });
  at::Tensor mask = causal_attention_mask(attention_mask, batch, length, hidden.scalar_type(),
                                          hidden.device(), settings.sliding_window);
  const RotaryCosSin cos_sin = rotary.forward(length, hidden.scalar_type(), hidden.device());
  for (size_t i = 0; i < layers->size(); ++i) {
    auto* layer = layers[i]->as<LlamaDecoderLayerImpl>();
    hidden = run_layer_block(
        hooks, "model.layers." + std::to_string(i), *layer, hidden,
        [layer, mask, cos_sin](const at::Tensor& x) { return layer->forward(x, mask, cos_sin); },
        gradient_checkpointing.layer(i) && is_training());
  }
  return run_hook_block(hooks, "model.norm", hidden, [&](const at::Tensor& x) { return norm(x); });
}

LlamaTaskModelImpl::LlamaTaskModelImpl(const PretrainedConfig& config, ModelTask task,
                                       const TaskModelInit& init)
    : DecoderTaskModel(config, task, llama_checkpoint_layout(config, task)),
      settings(LlamaSettings::read(config)) {
  model = register_module("model", LlamaModel(settings));
  std::vector<std::string> layers;
  for (int64_t i = 0; i < settings.num_hidden_layers; ++i)
    layers.push_back("model.layers." + std::to_string(i));
  add_head({settings.vocab_size, settings.max_position_embeddings, settings.num_hidden_layers,
            settings.hidden_size, settings.pad_token_id, settings.tie_word_embeddings},
           {{"model.embed_tokens"}, layers, "model.norm"});
  if (init.random) init_decoder_weights(*this, settings.initializer_range, init.seed);
}

at::Tensor LlamaTaskModelImpl::hidden_states(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                             LayerHooks* hooks) {
  return model->forward(input_ids, attention_mask, hooks);
}

void LlamaTaskModelImpl::set_gradient_checkpointing(const GradientCheckpointing& how) {
  TaskModel::set_gradient_checkpointing(how);
  model->gradient_checkpointing = how;
}

std::string llama_architecture(const LlamaSettings& settings, ModelTask task) {
  return settings.class_prefix + (task == ModelTask::CausalLM ? "ForCausalLM" : "ForSequenceClassification");
}

CheckpointLayout llama_checkpoint_layout(const PretrainedConfig& config, ModelTask task) {
  const LlamaSettings settings = LlamaSettings::read(config);
  CheckpointLayout layout;
  layout.architecture = llama_architecture(settings, task);
  layout.base_prefix = "model.";
  if (task == ModelTask::CausalLM && settings.tie_word_embeddings) layout.ignored = {"lm_head.weight"};
  layout.head_prefixes = {task == ModelTask::CausalLM ? "lm_head." : "score."};
  const double range = settings.initializer_range;
  layout.init = [range](torch::nn::Module& module, std::optional<uint64_t> seed) {
    init_decoder_weights(module, range, seed);
  };
  return layout;
}

}  // namespace berth
