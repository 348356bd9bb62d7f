// A tiny BERT and a learnable synthetic classification task, for tests that train through the Trainer.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "berth/data/split_mix64.h"
#include "berth/data/tokenized_dataset.h"
#include "berth/model/bert_config.h"
#include "berth/train/training_arguments.h"

namespace berth::testing {

inline BertConfig tiny_config(double dropout = 0.1) {
  BertConfig config;
  config.vocab_size = 40;
  config.hidden_size = 16;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 2;
  config.intermediate_size = 32;
  config.max_position_embeddings = 32;
  config.hidden_dropout_prob = dropout;
  config.attention_probs_dropout_prob = dropout;
  config.set_labels({"ham", "spam"});
  config.problem_type = kSingleLabelClassification;
  return config;
}

// Rows of 4..15 random tokens in [5, 40) between [CLS]=1 and [SEP]=2; label 1 when token 7 occurs, which it
// does in every odd row (inserted at a random place) and in no even one, so the task is learnable and
// balanced.
inline std::shared_ptr<data::TokenizedDataset> synthetic_dataset(size_t rows, uint64_t seed) {
  data::SplitMix64 rng(seed);
  std::vector<tokenizer::Encoding> encodings;
  std::vector<int64_t> labels;
  for (size_t r = 0; r < rows; ++r) {
    tokenizer::Encoding e;
    const size_t length = 4 + rng.next() % 12;
    const int64_t label = static_cast<int64_t>(r % 2);
    const size_t marker_at = rng.next() % length;
    e.ids.push_back(1);
    for (size_t i = 0; i < length; ++i) {
      auto id = static_cast<int64_t>(8 + rng.next() % 32);
      if (label == 1 && i == marker_at) id = 7;
      e.ids.push_back(id);
    }
    e.ids.push_back(2);
    e.type_ids.assign(e.ids.size(), 0);
    e.attention_mask.assign(e.ids.size(), 1);
    encodings.push_back(std::move(e));
    labels.push_back(label);
  }
  return std::make_shared<data::TokenizedDataset>(std::move(encodings), at::tensor(labels, at::kLong));
}

// Short CPU runs of that task: batches of 8, lr 1e-3, 2 epochs, a loss logged every 2 steps, no checkpoints.
inline train::TrainingArguments tiny_args(const std::string& output_dir) {
  train::TrainingArguments args;
  args.output_dir = output_dir;
  args.per_device_train_batch_size = 8;
  args.per_device_eval_batch_size = 16;
  args.learning_rate = 1e-3;
  args.num_train_epochs = 2;
  args.logging_steps = 2;
  args.save_strategy = "no";
  args.disable_tqdm = true;
  args.seed = 7;
  args.device = "cpu";
  args.dataloader_prefetch = 0;
  return args;
}

}  // namespace berth::testing
