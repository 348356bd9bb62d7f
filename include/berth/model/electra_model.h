// ELECTRA: HF's ElectraModel (BERT's embeddings at embedding_size, embeddings_project to hidden_size when
// they differ, BERT's encoder layers) and its sequence/token classification, masked-LM (generator) and
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
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace berth {

// HF's ElectraModel: embeddings, embeddings_project (only when embedding_size != hidden_size), encoder.
struct ElectraModelImpl : torch::nn::Module {
  ElectraModelImpl(const BertConfig& config, int64_t embedding_size);

  BertEmbeddings embeddings{nullptr};
  torch::nn::Linear embeddings_project{nullptr};  // null when the sizes agree
  BertEncoder encoder{nullptr};
};
TORCH_MODULE(ElectraModel);

// HF's ElectraGeneratorPredictions: dense to embedding_size, GELU, LayerNorm.
struct ElectraGeneratorPredictionsImpl : torch::nn::Module {
  ElectraGeneratorPredictionsImpl(const BertConfig& config, int64_t embedding_size);
  // hidden: (B, T, C) -> (B, T, E)
  at::Tensor forward(const at::Tensor& hidden);

  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(ElectraGeneratorPredictions);

// Electra<Head> for one task: electra.* plus classifier.dense / classifier.out_proj; classifier;
// generator_predictions + generator_lm_head (weight tied to the word embeddings); qa_outputs.
class ElectraTaskModel : public EncoderTaskModel {
 public:
  ElectraTaskModel(const PretrainedConfig& config, ModelTask task, CheckpointLayout layout,
                   const TaskModelInit& init);

  BertConfig bert;  // the config's BERT-named fields (hidden_size: the encoder's width)
  int64_t embedding_size = 0;
  ElectraModel electra{nullptr};
  FirstTokenClassifier sequence_head{nullptr};  // "classifier" for sequence classification
  torch::nn::Dropout dropout{nullptr};          // before the token classifier
  torch::nn::Linear linear_head{nullptr};       // "classifier" (tokens) or "qa_outputs"
  ElectraGeneratorPredictions generator_predictions{nullptr};
  TiedDecoder generator_lm_head{nullptr};

 protected:
  at::Tensor compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                            const at::Tensor& types) override;
};

}  // namespace berth
