// BertForMaskedLM: HF's BERT with its masked-language-model head (cls.predictions), the output layer tied to
// the word embeddings, for masked-LM pretraining (`berth train --task masked-lm`).
#pragma once

#include "berth/model/bert_config.h"
#include "berth/model/bert_token_heads.h"

#include <torch/nn/pimpl.h>

namespace berth {

// HF's BertForMaskedLM built from a BertConfig, as BertForSequenceClassification is: bert.* without the
// pooler, cls.predictions.*; the loss is cross-entropy over the vocabulary at the positions whose label is
// not -100. Hook blocks: "bert.embeddings", "bert.encoder.layer.<i>", "cls", then "bert.embeddings" again
// (the tied output layer's use, inside "cls"). load_task_model builds the same BertTokenTaskModel.
struct BertForMaskedLmImpl : BertTokenTaskModel {
  explicit BertForMaskedLmImpl(const BertConfig& config, const BertInitOptions& init = {});

 private:
  BertForMaskedLmImpl(const PretrainedConfig& config, const BertInitOptions& init);
};
TORCH_MODULE(BertForMaskedLm);

}  // namespace berth
