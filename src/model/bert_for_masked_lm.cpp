// BertForMaskedLM: the encoder's states through HF's prediction-head transform and the tied word embeddings,
// cross-entropy at the masked positions.
#include "berth/model/bert_for_masked_lm.h"

#include "berth/core/error.h"
#include "berth/model/checkpoint_io.h"
#include "berth/placement/batch_check.h"
#include "berth/placement/inspect.h"

#include <torch/torch.h>

#include <filesystem>

namespace berth {

BertPredictionHeadTransformImpl::BertPredictionHeadTransformImpl(const BertConfig& config)
    : activation(parse_activation(config.hidden_act)) {
  dense = register_module("dense", torch::nn::Linear(config.hidden_size, config.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.hidden_size}).eps(config.layer_norm_eps)));
}

at::Tensor BertPredictionHeadTransformImpl::forward(const at::Tensor& hidden) {
  return LayerNorm(apply_activation(activation, dense(hidden)));
}

BertLmPredictionHeadImpl::BertLmPredictionHeadImpl(const BertConfig& config) {
  transform = register_module("transform", BertPredictionHeadTransform(config));
  bias = register_parameter("bias", torch::zeros({config.vocab_size}));
}

at::Tensor BertLmPredictionHeadImpl::forward(const at::Tensor& hidden, const at::Tensor& word_embeddings) {
  return torch::nn::functional::linear(transform(hidden), word_embeddings, bias);
}

BertOnlyMlmHeadImpl::BertOnlyMlmHeadImpl(const BertConfig& config) {
  predictions = register_module("predictions", BertLmPredictionHead(config));
}

BertForMaskedLmImpl::BertForMaskedLmImpl(const BertConfig& bert_config, const BertInitOptions& init)
    : config(bert_config) {
  config.validate();
  bert = register_module("bert", BertModel(config, BertInitOptions{false, std::nullopt},
                                           /*add_pooling_layer=*/false));
  cls = register_module("cls", BertOnlyMlmHead(config));
  // HF's _init_weights; the head's bias starts at 0 as there.
  if (init.random) init_bert_weights(*this, config.initializer_range, init.seed);
}

at::Tensor BertForMaskedLmImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                        const at::Tensor& token_type_ids) {
  const at::Tensor hidden = bert(input_ids, attention_mask, token_type_ids).last_hidden_state;
  const at::Tensor& embeddings = bert->embeddings->word_embeddings->weight;
  if (!hooks_) return cls->predictions(hidden, embeddings);
  BertLmPredictionHeadImpl& head = *cls->predictions;
  const at::Tensor states = head.transform(hooks_->before_forward("cls", hidden));
  // The tied output layer reads the word embeddings again: a second use of their block, inside "cls" (which
  // holds the bias).
  const at::Tensor logits = hooks_->after_forward(
      "bert.embeddings", torch::nn::functional::linear(hooks_->before_forward("bert.embeddings", states),
                                                       embeddings, head.bias));
  return hooks_->after_forward("cls", logits);
}

TaskOutput BertForMaskedLmImpl::forward_batch(const Batch& batch) {
  const at::Tensor logits =
      forward(batch_input_ids(batch, "BertForMaskedLM"), batch_input(batch, "attention_mask"),
              batch_input(batch, "token_type_ids"));
  const at::Tensor labels = batch_input(batch, "labels");
  return {logits, labels.defined() ? loss(logits, labels) : at::Tensor()};
}

at::Tensor BertForMaskedLmImpl::loss(const at::Tensor& logits, const at::Tensor& labels) {
  check_tensor_on(labels, "labels", logits.device());
  BERTH_CHECK(labels.dim() == 2 && labels.size(0) == logits.size(0) && labels.size(1) == logits.size(1),
              "BertForMaskedLM: labels must hold one token id (or -100) per input token, shape (",
              logits.size(0), ", ", logits.size(1), "), found ", format_shape(labels.sizes()),
              ". Fix: train with --task masked-lm, whose batches carry masked-token labels");
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}).to(at::kFloat),
                                              labels.reshape({-1}).to(at::kLong));
}

TaskModelInfo BertForMaskedLmImpl::info() const {
  TaskModelInfo info;
  info.architecture = "BertForMaskedLM";
  info.max_positions = config.max_position_embeddings;
  info.summary = std::to_string(config.num_hidden_layers) + " layers, hidden " +
                 std::to_string(config.hidden_size) + ", vocab " + std::to_string(config.vocab_size);
  info.task = ModelTask::MaskedLM;
  return info;
}

void BertForMaskedLmImpl::save_pretrained(const std::string& dir) const {
  BertConfig out = config;
  out.torch_dtype = save_module_tensors(*this, dir);
  out.architectures = std::vector<std::string>{"BertForMaskedLM"};
  out.save((std::filesystem::path(dir) / "config.json").string());
}

std::vector<std::string> BertForMaskedLmImpl::hook_blocks() const {
  std::vector<std::string> blocks = bert->hook_blocks("bert.");
  blocks.push_back("cls");
  blocks.push_back("bert.embeddings");  // the tied output layer's use, inside "cls"
  return blocks;
}

void BertForMaskedLmImpl::set_gradient_checkpointing(const GradientCheckpointing& how) {
  TaskModel::set_gradient_checkpointing(how);
  bert->gradient_checkpointing = how;
}

void BertForMaskedLmImpl::set_layer_hooks(std::shared_ptr<LayerHooks> hooks) {
  bert->set_layer_hooks(hooks, "bert.");
  hooks_ = std::move(hooks);
}

}  // namespace berth
