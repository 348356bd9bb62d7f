// GPT-2 in libtorch as HF's modeling_gpt2 computes it in eager attention: Conv1D projections, pre-LayerNorm
// blocks, learned positions, the tied or separate language-model head and the last-token classifier.
#include "berth/model/gpt2_model.h"

#include "berth/core/error.h"
#include "berth/kernels/scaled_attention.h"
#include "berth/model/activation_checkpoint.h"
#include "berth/model/input_checks.h"
#include "berth/placement/batch_check.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>

namespace berth {
namespace {

const char* gpt2_architecture(ModelTask task) {
  return task == ModelTask::CausalLM ? "GPT2LMHeadModel" : "GPT2ForSequenceClassification";
}

}  // namespace

GPT2Settings GPT2Settings::read(const PretrainedConfig& config) {
  GPT2Settings s;
  s.vocab_size = config.get_int("vocab_size", s.vocab_size);
  s.n_positions = config.get_int("n_positions", s.n_positions);
  s.n_embd = config.get_int("n_embd", s.n_embd);
  s.n_layer = config.get_int("n_layer", s.n_layer);
  s.n_head = config.get_int("n_head", s.n_head);
  s.n_inner = config.get_optional_int("n_inner", std::nullopt).value_or(4 * s.n_embd);
  s.activation = parse_decoder_activation(config.get_string("activation_function", "gelu_new"),
                                          config.where("activation_function"));
  s.layer_norm_epsilon = config.get_number("layer_norm_epsilon", s.layer_norm_epsilon);
  s.initializer_range = config.get_number("initializer_range", s.initializer_range);
  s.embd_pdrop = config.get_number("embd_pdrop", s.embd_pdrop);
  s.attn_pdrop = config.get_number("attn_pdrop", s.attn_pdrop);
  s.resid_pdrop = config.get_number("resid_pdrop", s.resid_pdrop);
  s.scale_attn_weights = config.get_bool("scale_attn_weights", true);
  s.scale_attn_by_inverse_layer_idx = config.get_bool("scale_attn_by_inverse_layer_idx", false);
  s.reorder_and_upcast_attn = config.get_bool("reorder_and_upcast_attn", false);
  s.tie_word_embeddings = config.get_bool("tie_word_embeddings", true);
  s.pad_token_id = config.get_optional_int("pad_token_id", std::nullopt);
  if (config.get_bool("add_cross_attention", false))
    config.unsupported("add_cross_attention", "true",
                       "GPT-2 without cross-attention (add_cross_attention false)",
                       "use a decoder-only GPT-2 checkpoint");
  for (const auto& [field, value] : {std::pair<const char*, int64_t>{"vocab_size", s.vocab_size},
                                     {"n_positions", s.n_positions},
                                     {"n_embd", s.n_embd},
                                     {"n_layer", s.n_layer},
                                     {"n_head", s.n_head},
                                     {"n_inner", s.n_inner}})
    BERTH_CHECK(value > 0, config.where(field), " is ", value,
                "; it must be positive. Fix: correct config.json");
  BERTH_CHECK(s.n_embd % s.n_head == 0, config.where("n_embd"), " is ", s.n_embd,
              ", not divisible by n_head = ", s.n_head, ". Fix: choose n_embd a multiple of n_head");
  return s;
}

GPT2AttentionImpl::GPT2AttentionImpl(const GPT2Settings& settings, int64_t layer_idx)
    : num_heads(settings.n_head),
      head_dim(settings.n_embd / settings.n_head),
      reorder_and_upcast(settings.reorder_and_upcast_attn) {
  if (settings.scale_attn_weights) scaling = std::pow(static_cast<double>(head_dim), -0.5);
  if (settings.scale_attn_by_inverse_layer_idx) scaling /= static_cast<double>(layer_idx + 1);
  c_attn = register_module("c_attn", Conv1D(settings.n_embd, 3 * settings.n_embd));
  c_proj = register_module("c_proj", Conv1D(settings.n_embd, settings.n_embd));
  attn_dropout = register_module("attn_dropout", torch::nn::Dropout(settings.attn_pdrop));
  resid_dropout = register_module("resid_dropout", torch::nn::Dropout(settings.resid_pdrop));
}

at::Tensor GPT2AttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& mask) {
  const int64_t batch = hidden.size(0);
  const int64_t length = hidden.size(1);
  const int64_t channels = num_heads * head_dim;
  std::vector<at::Tensor> qkv = c_attn(hidden).split(channels, 2);
  // (B, T, C) -> (B, H, T, D)
  auto heads = [&](const at::Tensor& x) { return x.view({batch, length, -1, head_dim}).transpose(1, 2); };
  at::Tensor q = heads(qkv[0]);
  at::Tensor k = heads(qkv[1]);
  at::Tensor v = heads(qkv[2]);
  // (B, H, T, D) -> (B, T, H, D) -> (B, T, C)
  auto merge_heads = [&](const at::Tensor& x) {
    return x.transpose(1, 2).reshape({batch, length, channels}).contiguous();
  };
  // No dropout to apply and no float32 upcast asked for: torch's fused attention
  // (kernels/scaled_attention.h).
  if (!reorder_and_upcast && (!is_training() || attn_dropout->options.p() == 0))
    return resid_dropout(c_proj(merge_heads(kernels::scaled_attention(q, k, v, mask, scaling))));
  at::Tensor weights;
  if (reorder_and_upcast) {
    // HF's _upcast_and_reordered_attn: float32 baddbmm with the scale as alpha.
    at::Tensor q3 = q.reshape({-1, length, head_dim}).to(at::kFloat);
    at::Tensor k3 = k.transpose(-1, -2).reshape({-1, head_dim, length}).to(at::kFloat);
    at::Tensor empty = torch::empty({batch * num_heads, length, length}, q3.options());
    weights =
        at::baddbmm(empty, q3, k3, /*beta=*/0, /*alpha=*/scaling).view({batch, num_heads, length, length});
  } else {
    weights = torch::matmul(q, k.transpose(-1, -2)) * scaling;
  }
  // (B, H, T, T) probabilities, back in v's dtype
  weights = attn_dropout(torch::softmax(weights + mask, -1).to(v.scalar_type()));
  return resid_dropout(c_proj(merge_heads(torch::matmul(weights, v))));
}

GPT2MLPImpl::GPT2MLPImpl(const GPT2Settings& settings) : activation(settings.activation) {
  c_fc = register_module("c_fc", Conv1D(settings.n_embd, settings.n_inner));
  c_proj = register_module("c_proj", Conv1D(settings.n_inner, settings.n_embd));
  dropout = register_module("dropout", torch::nn::Dropout(settings.resid_pdrop));
}

at::Tensor GPT2MLPImpl::forward(const at::Tensor& hidden) {
  return dropout(c_proj(apply_decoder_activation(activation, c_fc(hidden))));
}

GPT2BlockImpl::GPT2BlockImpl(const GPT2Settings& settings, int64_t layer_idx) {
  auto norm = [&] {
    return torch::nn::LayerNorm(
        torch::nn::LayerNormOptions({settings.n_embd}).eps(settings.layer_norm_epsilon));
  };
  ln_1 = register_module("ln_1", norm());
  attn = register_module("attn", GPT2Attention(settings, layer_idx));
  ln_2 = register_module("ln_2", norm());
  mlp = register_module("mlp", GPT2MLP(settings));
}

at::Tensor GPT2BlockImpl::forward(const at::Tensor& hidden, const at::Tensor& mask) {
  at::Tensor attended = attn(ln_1(hidden), mask) + hidden;
  return attended + mlp(ln_2(attended));
}

GPT2ModelImpl::GPT2ModelImpl(const GPT2Settings& gpt2_settings) : settings(gpt2_settings) {
  wte = register_module("wte", torch::nn::Embedding(settings.vocab_size, settings.n_embd));
  wpe = register_module("wpe", torch::nn::Embedding(settings.n_positions, settings.n_embd));
  drop = register_module("drop", torch::nn::Dropout(settings.embd_pdrop));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < settings.n_layer; ++i) h->push_back(GPT2Block(settings, i));
  ln_f = register_module(
      "ln_f",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({settings.n_embd}).eps(settings.layer_norm_epsilon)));
}

at::Tensor GPT2ModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                  LayerHooks* hooks) {
  check_token_inputs({"GPT2Model", settings.vocab_size, settings.n_positions, "n_positions",
                      " (or use a shorter --block-size)"},
                     input_ids, {{"attention_mask", attention_mask}});
  check_batch({{"input_ids", input_ids}, {"attention_mask", attention_mask}}, wte->weight.device());
  const int64_t batch = input_ids.size(0);
  const int64_t length = input_ids.size(1);
  at::Tensor embeds =
      run_hook_block(hooks, "transformer.wte", input_ids, [&](const at::Tensor& ids) { return wte(ids); });
  at::Tensor positions = torch::arange(length, input_ids.options().dtype(at::kLong)).unsqueeze(0);
  at::Tensor hidden = embeds + run_hook_block(hooks, "transformer.wpe", positions,
                                              [&](const at::Tensor& p) { return wpe(p); });
  at::Tensor mask =
      causal_attention_mask(attention_mask, batch, length, embeds.scalar_type(), embeds.device());
  hidden = drop(hidden);
  for (size_t i = 0; i < h->size(); ++i) {
    auto* block = h[i]->as<GPT2BlockImpl>();
    hidden = run_layer_block(
        hooks, "transformer.h." + std::to_string(i), *block, hidden,
        [block, mask](const at::Tensor& x) { return block->forward(x, mask); },
        gradient_checkpointing.layer(i) && is_training());
  }
  return run_hook_block(hooks, "transformer.ln_f", hidden, [&](const at::Tensor& x) { return ln_f(x); });
}

GPT2TaskModelImpl::GPT2TaskModelImpl(const PretrainedConfig& config, ModelTask task,
                                     const TaskModelInit& init)
    : DecoderTaskModel(config, task, gpt2_checkpoint_layout(config, task)),
      settings(GPT2Settings::read(config)) {
  transformer = register_module("transformer", GPT2Model(settings));
  std::vector<std::string> layers;
  for (int64_t i = 0; i < settings.n_layer; ++i) layers.push_back("transformer.h." + std::to_string(i));
  add_head({settings.vocab_size, settings.n_positions, settings.n_layer, settings.n_embd,
            settings.pad_token_id, settings.tie_word_embeddings},
           {{"transformer.wte", "transformer.wpe"}, layers, "transformer.ln_f"});
  if (init.random) init_gpt2_weights(*this, settings, init.seed);
}

at::Tensor GPT2TaskModelImpl::hidden_states(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                            LayerHooks* hooks) {
  return transformer->forward(input_ids, attention_mask, hooks);
}

void GPT2TaskModelImpl::set_gradient_checkpointing(const GradientCheckpointing& how) {
  TaskModel::set_gradient_checkpointing(how);
  transformer->gradient_checkpointing = how;
}

void init_gpt2_weights(torch::nn::Module& module, const GPT2Settings& settings,
                       std::optional<uint64_t> seed) {
  init_decoder_weights(module, settings.initializer_range, seed);
  // A second generator stream, so a seed still gives one fixed set of weights.
  at::Generator generator =
      seed ? at::make_generator<at::CPUGeneratorImpl>(*seed + 1) : at::detail::getDefaultCPUGenerator();
  const double std = settings.initializer_range / std::sqrt(2.0 * static_cast<double>(settings.n_layer));
  torch::NoGradGuard no_grad;
  for (const auto& item : module.named_modules("", /*include_self=*/false)) {
    const std::string& name = item.key();
    const bool residual = name.size() >= 11 && (name.compare(name.size() - 11, 11, "attn.c_proj") == 0 ||
                                                name.compare(name.size() - 10, 10, "mlp.c_proj") == 0);
    if (!residual) continue;
    auto* conv = dynamic_cast<Conv1DImpl*>(item.value().get());
    if (conv == nullptr) continue;
    conv->weight.copy_(
        at::normal(0.0, std, conv->weight.sizes(), generator, at::TensorOptions().dtype(at::kFloat)));
  }
}

CheckpointLayout gpt2_checkpoint_layout(const PretrainedConfig& config, ModelTask task) {
  CheckpointLayout layout;
  layout.architecture = gpt2_architecture(task);
  layout.base_prefix = "transformer.";
  // HF's _keys_to_ignore_on_load_unexpected: the causal-mask buffers older GPT-2 checkpoints saved.
  layout.ignored = {"attn.bias", "crossattention.bias"};
  if (task == ModelTask::CausalLM && config.get_bool("tie_word_embeddings", true))
    layout.ignored.push_back("lm_head.weight");
  layout.head_prefixes = {task == ModelTask::CausalLM ? "lm_head." : "score."};
  GPT2Settings settings = GPT2Settings::read(config);
  layout.init = [settings](torch::nn::Module& module, std::optional<uint64_t> seed) {
    init_gpt2_weights(module, settings, seed);
  };
  return layout;
}

}  // namespace berth
