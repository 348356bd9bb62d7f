// HF's BERT computation in libtorch: embeddings, eager self-attention with the additive mask, pooler.
#include "berth/model/bert_model.h"

#include "berth/core/error.h"
#include "berth/kernels/attention_softmax.h"
#include "berth/kernels/dropout.h"
#include "berth/kernels/fused.h"
#include "berth/kernels/residual_layer_norm.h"
#include "berth/kernels/scaled_attention.h"
#include "berth/model/activation_checkpoint.h"
#include "berth/model/input_checks.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/inspect.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <vector>

namespace berth {
namespace {

constexpr double kPi = 3.14159265358979323846;  // M_PI is not standard C++

// Visits every submodule below `module` in registration order (named_children, which unlike modules()
// needs no shared_ptr root).
template <typename Fn>
void for_each_module(torch::nn::Module& module, const Fn& fn) {
  fn(module);
  for (const auto& child : module.named_children()) for_each_module(*child.value(), fn);
}

void fill_normal(at::Tensor& tensor, double std, at::Generator& generator) {
  torch::NoGradGuard no_grad;
  at::Tensor values = at::normal(0.0, std, tensor.sizes(), generator, at::TensorOptions().dtype(at::kFloat));
  tensor.copy_(values);
}

void check_inputs(const BertConfig& config, const at::Tensor& input_ids, const at::Tensor& attention_mask,
                  const at::Tensor& token_type_ids) {
  check_token_inputs(
      {"BertModel", config.vocab_size, config.max_position_embeddings, "max_position_embeddings"}, input_ids,
      {{"attention_mask", attention_mask}, {"token_type_ids", token_type_ids}});
  if (token_type_ids.defined() && token_type_ids.device().is_cpu() && token_type_ids.numel() > 0) {
    const int64_t low = token_type_ids.min().item<int64_t>();
    const int64_t high = token_type_ids.max().item<int64_t>();
    BERTH_CHECK(low >= 0 && high < config.type_vocab_size, "BertModel: token_type_ids holds [", low, ", ",
                high, "] but type_vocab_size is ", config.type_vocab_size, " (ids 0..",
                config.type_vocab_size - 1, "). Fix: 0 for the first text, 1 for the pair");
  }
}

// x: (..., in) -> (..., out), as Python's nn.Linear computes it: at::linear folds a contiguous 3-D input into
// one addmm with the bias inside the GEMM, while libtorch's C++ F::linear runs matmul and then adds the bias
// in a second pass over the output.
at::Tensor linear(torch::nn::Linear& layer, const at::Tensor& x) {
  if (!layer->bias.defined() || x.dim() < 2 || !x.is_contiguous()) return layer(x);
  std::vector<int64_t> sizes = x.sizes().vec();
  at::Tensor out = at::addmm(layer->bias, x.view({-1, sizes.back()}), layer->weight.t());
  sizes.back() = out.size(1);
  return out.view(sizes);
}

}  // namespace

void init_bert_weights(torch::nn::Module& module, double initializer_range, std::optional<uint64_t> seed) {
  at::Generator generator =
      seed ? at::make_generator<at::CPUGeneratorImpl>(*seed) : at::detail::getDefaultCPUGenerator();
  // No lock here: at::normal takes the generator's own mutex for each draw.
  torch::NoGradGuard no_grad;
  for_each_module(module, [&](torch::nn::Module& m) {
    if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(&m)) {
      fill_normal(linear->weight, initializer_range, generator);
      if (linear->bias.defined()) linear->bias.zero_();
    } else if (auto* embedding = dynamic_cast<torch::nn::EmbeddingImpl*>(&m)) {
      fill_normal(embedding->weight, initializer_range, generator);
      if (auto pad = embedding->options.padding_idx()) embedding->weight[*pad].zero_();
    } else if (auto* norm = dynamic_cast<torch::nn::LayerNormImpl*>(&m)) {
      norm->weight.fill_(1.0);
      norm->bias.zero_();
    }
  });
}

at::Tensor extended_attention_mask(const at::Tensor& attention_mask, c10::ScalarType dtype) {
  double lowest = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "extended_attention_mask", [&] {
    lowest = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
  });
  // (B, T) -> (B, 1, 1, T): broadcast over heads and query positions.
  at::Tensor mask = attention_mask.unsqueeze(1).unsqueeze(2).to(dtype);
  return (1.0 - mask) * lowest;
}

Activation parse_activation(const std::string& name) {
  if (name == "gelu") return Activation::Gelu;
  if (name == "gelu_new") return Activation::GeluNew;
  if (name == "gelu_pytorch_tanh") return Activation::GeluPytorchTanh;
  if (name == "relu") return Activation::Relu;
  BERTH_FAIL("hidden_act \"", name,
             "\" is not a supported activation: berth implements gelu, gelu_new, gelu_pytorch_tanh, relu");
}

at::Tensor apply_activation(Activation activation, const at::Tensor& x) {
  switch (activation) {
    case Activation::Gelu:
      return torch::gelu(x);  // the exact, erf-based GELU
    case Activation::GeluNew:
      // transformers' NewGELUActivation, written as there (not torch's fused tanh GELU) to round the same
      // way.
      return 0.5 * x * (1.0 + torch::tanh(std::sqrt(2.0 / kPi) * (x + 0.044715 * torch::pow(x, 3.0))));
    case Activation::GeluPytorchTanh:
      return torch::gelu(x, "tanh");
    case Activation::Relu:
      return torch::relu(x);
  }
  BERTH_BUG(false, "unknown Activation ", static_cast<int>(activation));
}

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertConfig& config) {
  torch::nn::EmbeddingOptions words(config.vocab_size, config.hidden_size);
  if (config.pad_token_id) words.padding_idx(*config.pad_token_id);
  word_embeddings = register_module("word_embeddings", torch::nn::Embedding(words));
  position_embeddings = register_module(
      "position_embeddings", torch::nn::Embedding(config.max_position_embeddings, config.hidden_size));
  token_type_embeddings = register_module("token_type_embeddings",
                                          torch::nn::Embedding(config.type_vocab_size, config.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size}).eps(config.layer_norm_eps)));
  dropout = register_module("dropout", torch::nn::Dropout(config.hidden_dropout_prob));
}

at::Tensor BertEmbeddingsImpl::forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids) {
  // (1, T): broadcast over the batch, as HF's position_ids[:, :T].
  at::Tensor position_ids =
      torch::arange(input_ids.size(1), input_ids.options().dtype(at::kLong)).unsqueeze(0);
  at::Tensor embeddings = word_embeddings(input_ids) + token_type_embeddings(token_type_ids);
  embeddings = embeddings + position_embeddings(position_ids);
  // Training on CPU float32 draws the mask from berth's counter-based dropout (kernels/dropout.h).
  if (is_training() && kernels::use_fused(embeddings))
    return kernels::dropout(LayerNorm(embeddings), dropout->options.p(), true);
  return dropout(LayerNorm(embeddings));
}

BertSelfAttentionImpl::BertSelfAttentionImpl(const BertConfig& config)
    : num_heads(config.num_attention_heads), head_size(config.head_size()) {
  BERTH_BUG(num_heads * head_size == config.hidden_size, "hidden_size ", config.hidden_size,
            " not divisible by heads ", num_heads, ": validate() should have refused the config");
  query = register_module("query", torch::nn::Linear(config.hidden_size, config.hidden_size));
  key = register_module("key", torch::nn::Linear(config.hidden_size, config.hidden_size));
  value = register_module("value", torch::nn::Linear(config.hidden_size, config.hidden_size));
  dropout = register_module("dropout", torch::nn::Dropout(config.attention_probs_dropout_prob));
}

at::Tensor BertSelfAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& extended_mask) {
  const int64_t batch = hidden.size(0);
  const int64_t length = hidden.size(1);
  // (B, T, C) -> (B, H, T, D)
  auto split_heads = [&](const at::Tensor& x) {
    return x.view({batch, length, num_heads, head_size}).permute({0, 2, 1, 3});
  };
  at::Tensor q = split_heads(linear(query, hidden));
  at::Tensor k = split_heads(linear(key, hidden));
  at::Tensor v = split_heads(linear(value, hidden));
  // (B, H, T, D) -> (B, T, H, D) -> (B, T, C)
  auto merge_heads = [&](const at::Tensor& x) {
    return x.permute({0, 2, 1, 3}).contiguous().view({batch, length, num_heads * head_size});
  };
  const double divisor = std::sqrt(static_cast<double>(head_size));
  // No dropout to apply (evaluation, inference, p = 0): torch's fused attention, without the (B, H, T, T)
  // scores.
  if (!is_training() || dropout->options.p() == 0)
    return merge_heads(kernels::scaled_attention(q, k, v, extended_mask, 1.0 / divisor));
  // (B, H, T, T): scaled dot products, padding keys pushed to finfo.min before the softmax.
  at::Tensor scores = torch::matmul(q, k.transpose(-1, -2));
  // HF drops whole attention probabilities (tokens to attend to), as the original Transformer did.
  at::Tensor probs;
  if (is_training() && kernels::use_fused(scores)) {
    // One fused pass for scale, mask, softmax and dropout (kernels/attention_softmax.h).
    probs = kernels::attention_softmax(scores, extended_mask, divisor, dropout->options.p(), true);
  } else {
    probs = dropout(torch::softmax(scores / divisor + extended_mask, -1));
  }
  return merge_heads(torch::matmul(probs, v));
}

BertResidualOutputImpl::BertResidualOutputImpl(int64_t in_features, const BertConfig& config) {
  dense = register_module("dense", torch::nn::Linear(in_features, config.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size}).eps(config.layer_norm_eps)));
  dropout = register_module("dropout", torch::nn::Dropout(config.hidden_dropout_prob));
}

at::Tensor BertResidualOutputImpl::forward(const at::Tensor& hidden, const at::Tensor& residual) {
  if (is_training() && kernels::use_fused(hidden)) {
    // The GEMM without its bias, then bias, dropout, residual and LayerNorm in one fused pass
    // (kernels/residual_layer_norm.h); the parameters stay dense.{weight,bias}, LayerNorm.{weight,bias}.
    return kernels::residual_layer_norm(torch::matmul(hidden, dense->weight.t()), dense->bias, residual,
                                        LayerNorm->weight, LayerNorm->bias, LayerNorm->options.eps(),
                                        dropout->options.p(), true);
  }
  return LayerNorm(dropout(linear(dense, hidden)) + residual);
}

BertAttentionImpl::BertAttentionImpl(const BertConfig& config) {
  self = register_module("self", BertSelfAttention(config));
  output = register_module("output", BertResidualOutput(config.hidden_size, config));
}

at::Tensor BertAttentionImpl::forward(const at::Tensor& hidden, const at::Tensor& extended_mask) {
  return output(self(hidden, extended_mask), hidden);
}

BertIntermediateImpl::BertIntermediateImpl(const BertConfig& config)
    : activation(parse_activation(config.hidden_act)) {
  dense = register_module("dense", torch::nn::Linear(config.hidden_size, config.intermediate_size));
}

at::Tensor BertIntermediateImpl::forward(const at::Tensor& hidden) {
  return apply_activation(activation, linear(dense, hidden));
}

BertLayerImpl::BertLayerImpl(const BertConfig& config) {
  attention = register_module("attention", BertAttention(config));
  intermediate = register_module("intermediate", BertIntermediate(config));
  output = register_module("output", BertResidualOutput(config.intermediate_size, config));
}

at::Tensor BertLayerImpl::forward(const at::Tensor& hidden, const at::Tensor& extended_mask) {
  at::Tensor attended = attention(hidden, extended_mask);
  return output(intermediate(attended), attended);
}

BertEncoderImpl::BertEncoderImpl(const BertConfig& config) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) layer->push_back(BertLayer(config));
}

at::Tensor BertEncoderImpl::forward(at::Tensor hidden, const at::Tensor& extended_mask) {
  for (const auto& module : *layer) hidden = module->as<BertLayerImpl>()->forward(hidden, extended_mask);
  return hidden;
}

BertPoolerImpl::BertPoolerImpl(const BertConfig& config) {
  dense = register_module("dense", torch::nn::Linear(config.hidden_size, config.hidden_size));
}

at::Tensor BertPoolerImpl::forward(const at::Tensor& hidden) {
  return torch::tanh(dense(hidden.select(1, 0)));
}

BertModelImpl::BertModelImpl(const BertConfig& bert_config, const BertInitOptions& init,
                             bool add_pooling_layer)
    : config(bert_config) {
  config.validate();
  embeddings = register_module("embeddings", BertEmbeddings(config));
  encoder = register_module("encoder", BertEncoder(config));
  if (add_pooling_layer) pooler = register_module("pooler", BertPooler(config));
  if (init.random) init_bert_weights(*this, config.initializer_range, init.seed);
}

BertModelOutput BertModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                       const at::Tensor& token_type_ids) {
  check_inputs(config, input_ids, attention_mask, token_type_ids);
  const at::Tensor& weight = embeddings->word_embeddings->weight;
  check_batch(
      {{"input_ids", input_ids}, {"attention_mask", attention_mask}, {"token_type_ids", token_type_ids}},
      weight.device());
  at::Tensor mask = attention_mask.defined() ? attention_mask : torch::ones_like(input_ids);
  at::Tensor types = token_type_ids.defined() ? token_type_ids : torch::zeros_like(input_ids);
  at::Tensor extended = extended_attention_mask(mask, weight.scalar_type());
  if (!hooks_ && !gradient_checkpointing.enabled) {
    at::Tensor hidden = encoder(embeddings(input_ids, types), extended);
    return {hidden, pooler ? pooler(hidden) : at::Tensor()};
  }
  // With hooks or checkpointing the encoder's layers run one by one here, so each can be wrapped.
  LayerHooks* hooks = hooks_.get();
  auto block_name = [&](size_t i) { return hooks ? hook_blocks_[i] : std::string(); };
  at::Tensor hidden = run_hook_block(hooks, block_name(0), input_ids,
                                     [&](const at::Tensor& ids) { return embeddings(ids, types); });
  for (size_t i = 0; i < encoder->layer->size(); ++i) {
    auto* layer = encoder->layer[i]->as<BertLayerImpl>();
    hidden = run_layer_block(
        hooks, block_name(i + 1), *layer, hidden,
        [layer, extended](const at::Tensor& x) { return layer->forward(x, extended); },
        gradient_checkpointing.layer(i) && is_training());
  }
  if (!pooler) return {hidden, at::Tensor()};
  return {hidden, run_hook_block(hooks, block_name(encoder->layer->size() + 1), hidden,
                                 [&](const at::Tensor& x) { return pooler(x); })};
}

void BertModelImpl::set_layer_hooks(std::shared_ptr<LayerHooks> hooks, const std::string& prefix) {
  hooks_ = std::move(hooks);
  hook_blocks_.clear();
  if (hooks_) hook_blocks_ = hook_blocks(prefix);
}

std::vector<std::string> BertModelImpl::hook_blocks(const std::string& prefix) const {
  std::vector<std::string> blocks{prefix + "embeddings"};
  for (size_t i = 0; i < encoder->layer->size(); ++i)
    blocks.push_back(prefix + "encoder.layer." + std::to_string(i));
  if (pooler) blocks.push_back(prefix + "pooler");
  return blocks;
}

}  // namespace berth
