// RoBERTa (and XLM-RoBERTa, the same modules under other class names): HF's RobertaEmbeddings with
// padding-offset positions, BERT's encoder layers, and the sequence/token classification, masked-LM and
// question-answering heads, under HF's parameter names.
#pragma once

#include "berth/model/auto_model.h"
#include "berth/model/bert_config.h"
#include "berth/model/bert_model.h"
#include "berth/model/encoder_heads.h"
#include "berth/model/encoder_task_model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>

namespace berth {

// HF's create_position_ids_from_input_ids: input_ids (B, T) -> (B, T) int64 positions counting the non-pad
// tokens from padding_idx + 1; pad tokens get padding_idx (whose embedding row is the padding row).
at::Tensor roberta_position_ids(const at::Tensor& input_ids, int64_t padding_idx);

struct RobertaEmbeddingsImpl : torch::nn::Module {
  explicit RobertaEmbeddingsImpl(const BertConfig& config);
  // input_ids, token_type_ids: (B, T) int64 -> (B, T, C)
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& token_type_ids);

  int64_t padding_idx = 1;
  torch::nn::Embedding word_embeddings{nullptr};
  torch::nn::Embedding position_embeddings{nullptr};
  torch::nn::Embedding token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(RobertaEmbeddings);

// HF's RobertaModel without its pooler (every task head builds it with add_pooling_layer=False).
struct RobertaModelImpl : torch::nn::Module {
  explicit RobertaModelImpl(const BertConfig& config);

  RobertaEmbeddings embeddings{nullptr};
  BertEncoder encoder{nullptr};
};
TORCH_MODULE(RobertaModel);

// HF's RobertaLMHead: dense, GELU, layer_norm, then the word embeddings (tied, not a tensor of its own) plus
// bias.
struct RobertaLMHeadImpl : torch::nn::Module {
  explicit RobertaLMHeadImpl(const BertConfig& config);
  // hidden: (B, T, C), word_embeddings: (V, C) -> (B, T, V): decode(transform(hidden))
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& word_embeddings);
  // hidden: (B, T, C) -> (B, T, C): dense, GELU, layer_norm
  at::Tensor transform(const at::Tensor& hidden);
  // x: (B, T, C), word_embeddings: (V, C) -> (B, T, V): the tied decoder with this head's bias
  at::Tensor decode(const at::Tensor& x, const at::Tensor& word_embeddings);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  at::Tensor bias;
};
TORCH_MODULE(RobertaLMHead);

// Roberta<Head> / XLMRoberta<Head> for one task: roberta.* plus the head HF names for it (classifier.dense /
// classifier.out_proj; classifier; lm_head; qa_outputs).
class RobertaTaskModel : public EncoderTaskModel {
 public:
  RobertaTaskModel(const PretrainedConfig& config, ModelTask task, CheckpointLayout layout,
                   const TaskModelInit& init);

  BertConfig bert;  // the config's BERT-named fields
  RobertaModel roberta{nullptr};
  FirstTokenClassifier sequence_head{nullptr};  // "classifier" for sequence classification
  torch::nn::Dropout dropout{nullptr};          // before the token classifier
  torch::nn::Linear linear_head{nullptr};       // "classifier" (tokens) or "qa_outputs"
  RobertaLMHead lm_head{nullptr};
  std::string head_block;  // the head's module: "classifier", "lm_head" or "qa_outputs"

 protected:
  at::Tensor compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                            const at::Tensor& types) override;
};

}  // namespace berth
