// BertForTokenClassification, BertForQuestionAnswering and BertForMaskedLM: HF's BERT without its pooler and
// a head on every token, as an EncoderTaskModel (one class, the head chosen by the task).
#pragma once

#include "berth/model/auto_model.h"
#include "berth/model/bert_config.h"
#include "berth/model/bert_mlm_head.h"
#include "berth/model/bert_model.h"
#include "berth/model/encoder_task_model.h"

#include <ATen/core/Tensor.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include <string>

namespace berth {

// bert.* (embeddings and encoder; HF builds these heads with add_pooling_layer=False) plus, for token
// classification, dropout and "classifier" (hidden -> num_labels), for question answering "qa_outputs"
// (hidden -> 2: start and end logits), for masked LM "cls" (the transform, then the word embeddings tied as
// the output layer). Other tasks are a bug of the caller.
class BertTokenTaskModel : public EncoderTaskModel {
 public:
  BertTokenTaskModel(const PretrainedConfig& config, ModelTask task, CheckpointLayout layout,
                     const TaskModelInit& init);

  BertConfig bert_config;
  BertModel bert{nullptr};
  torch::nn::Dropout dropout{nullptr};  // before the token classifier (HF's classifier_dropout)
  torch::nn::Linear head{nullptr};      // "classifier" or "qa_outputs"
  BertOnlyMlmHead cls{nullptr};         // masked LM
  std::string head_block;

 protected:
  // input_ids, mask, types: (B, T) -> (B, T, num_labels) token logits, (B, T, 2) start/end logits or
  // (B, T, vocab) masked-LM logits
  at::Tensor compute_logits(const at::Tensor& input_ids, const at::Tensor& mask,
                            const at::Tensor& types) override;
};

}  // namespace berth
