// TaskModel: BertForSequenceClassification seen through the interface the Trainer uses (forward on a batch,
// info, hook blocks, save and load), the block lookup ZeRO-3 relies on, and the parameter counts.
#include "berth/model/task_model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/model/auto_model.h"
#include "berth/model/bert_for_masked_lm.h"
#include "berth/model/bert_for_sequence_classification.h"
#include "berth/train/memory_estimate.h"
#include "support/test_support.h"
#include "support/tiny_training.h"

namespace berth {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;
using berth::testing::TempDir;

// tests/support/tiny_training.h's BERT (vocabulary 40, hidden 16, 2 layers, 32 positions) with `labels`
// outputs and the problem type left for the model to decide.
BertConfig small_config(int64_t labels) {
  BertConfig config = berth::testing::tiny_config();
  config.set_num_labels(labels);
  config.problem_type.reset();
  return config;
}

BertForSequenceClassification eval_model(const BertConfig& config) {
  BertForSequenceClassification model(config, BertInitOptions{true, 3});
  model->eval();
  return model;
}

Batch batch_of(int64_t b, int64_t t) {
  Batch batch;
  batch["input_ids"] = torch::randint(1, 40, {b, t}, torch::kLong);
  batch["attention_mask"] = torch::ones({b, t}, torch::kLong);
  batch["attention_mask"].index_put_({0, torch::indexing::Slice(t - 2)}, 0);  // a padded row
  batch["token_type_ids"] = torch::zeros({b, t}, torch::kLong);
  batch["labels"] = torch::tensor({0, 2, 1}, torch::kLong);
  return batch;
}

TEST(TaskModel, BertForwardOnABatchIsItsTensorForward) {
  torch::manual_seed(5);
  auto model = eval_model(small_config(3));
  const Batch batch = batch_of(3, 7);
  TaskModel& task = *model;
  const TaskOutput out = task.forward_batch(batch);
  const SequenceClassifierOutput direct = model->forward(batch.at("input_ids"), batch.at("attention_mask"),
                                                         batch.at("token_type_ids"), batch.at("labels"));
  EXPECT_TRUE(torch::equal(out.logits, direct.logits));
  EXPECT_TRUE(torch::equal(out.loss, direct.loss));
  EXPECT_TRUE(torch::equal(task.loss(out.logits, batch.at("labels")), direct.loss));
  Batch unlabelled = batch;
  unlabelled.erase("labels");
  unlabelled.erase("token_type_ids");  // optional: zeros, as HF
  const TaskOutput no_labels = task.forward_batch(unlabelled);
  EXPECT_FALSE(no_labels.loss.defined());
  EXPECT_TRUE(torch::equal(no_labels.logits, direct.logits));
  expect_contains(error_text([&] {
                    task.forward_batch({{"attention_mask", batch.at("attention_mask")}});
                  }),
                  {"the batch has no input_ids", "(it has attention_mask)", "Fix: tokenise"});
}

TEST(TaskModel, BertInfoFollowsTheConfig) {
  BertConfig config = small_config(3);
  config.set_labels({"neg", "neutral", "pos"});
  BertForSequenceClassification model(config);
  TaskModelInfo info = model->info();
  EXPECT_EQ(info.architecture, "BertForSequenceClassification");
  EXPECT_EQ(info.problem_type, kSingleLabelClassification);  // unset, more than one label
  EXPECT_EQ(info.labels, (std::vector<std::string>{"neg", "neutral", "pos"}));
  EXPECT_EQ(info.max_positions, 32);
  EXPECT_EQ(info.summary, "2 layers, hidden 16, vocab 40");
  EXPECT_EQ(BertForSequenceClassification(small_config(1))->info().problem_type, kRegression);
  config.problem_type = kMultiLabelClassification;
  EXPECT_EQ(BertForSequenceClassification(config)->info().problem_type, kMultiLabelClassification);
}

TEST(TaskModel, EveryBertParameterBelongsToOneOfItsHookBlocks) {
  BertForSequenceClassification model(small_config(2));
  const std::vector<std::string> blocks = model->hook_blocks();
  EXPECT_EQ(blocks, (std::vector<std::string>{"bert.embeddings", "bert.encoder.layer.0",
                                              "bert.encoder.layer.1", "bert.pooler", "classifier"}));
  std::map<std::string, int> per_block;
  for (const auto& item : model->named_parameters()) ++per_block[block_of(blocks, item.key())];
  EXPECT_EQ(per_block.count(""), 0u);
  EXPECT_EQ(per_block.size(), blocks.size());
  EXPECT_EQ(block_of(blocks, "bert.encoder.layer.1.output.dense.weight"), "bert.encoder.layer.1");
}

TEST(TaskModel, BlockOfTakesTheLongestDottedPrefix) {
  const std::vector<std::string> blocks{"enc", "enc.layer.1", "head"};
  EXPECT_EQ(block_of(blocks, "enc.layer.1.weight"), "enc.layer.1");
  EXPECT_EQ(block_of(blocks, "enc.layer.10.weight"), "enc");  // layer.1 is not a dotted prefix of layer.10
  EXPECT_EQ(block_of(blocks, "head.bias"), "head");
  EXPECT_EQ(block_of(blocks, "heads.bias"), "");
  EXPECT_EQ(block_of(blocks, "head"), "");  // a block's name is not one of its parameters
}

TEST(TaskModel, ParameterCountsOverTheInterface) {
  const BertConfig config = small_config(2);
  BertForSequenceClassification model(config);
  int64_t total = 0;
  for (const auto& p : model->parameters()) total += p.numel();
  // HF's exclude_embeddings drops the nn.Embedding weights only (the embeddings' LayerNorm counts).
  const int64_t embedding_weights =
      (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * config.hidden_size;
  EXPECT_EQ(non_embedding_parameters(*model), total - embedding_weights);
  EXPECT_EQ(largest_block_parameters(*model), train::largest_bert_layer_parameters(config, 2));
  // A masked LM's tied decoder runs inside "cls": the embeddings (the largest block with 400 words) and the
  // head are gathered together.
  BertConfig wide = config;
  wide.vocab_size = 400;
  BertForMaskedLm mlm(wide);
  int64_t embeddings = 0, head = 0;
  for (const auto& p : mlm->named_parameters()) {
    if (p.key().rfind("bert.embeddings.", 0) == 0) embeddings += p.value().numel();
    if (p.key().rfind("cls.", 0) == 0) head += p.value().numel();
  }
  EXPECT_EQ(largest_block_parameters(*mlm), embeddings + head);
}

TEST(TaskModel, SaveAndLoadThroughTheInterfaceRoundTrips) {
  TempDir dir;
  auto model = eval_model(small_config(2));
  const TaskModel& task = *model;
  task.save_pretrained(dir.file("saved"));
  auto loaded = load_task_model(dir.file("saved"));
  EXPECT_TRUE(loaded.report.clean());
  EXPECT_EQ(loaded.model->info().architecture, "BertForSequenceClassification");
  loaded.model->module().eval();
  Batch batch = batch_of(3, 5);
  batch.erase("labels");
  EXPECT_TRUE(torch::equal(loaded.model->forward_batch(batch).logits, model->forward_batch(batch).logits));
}

TEST(TaskModel, AnUnsupportedModelTypeIsNamed) {
  TempDir dir;
  BertForSequenceClassification(small_config(2))->save_pretrained(dir.path().string());
  std::ifstream in(dir.file("config.json"));
  nlohmann::json config = nlohmann::json::parse(in);
  config["model_type"] = "funnel";
  std::ofstream(dir.file("config.json")) << config.dump();
  expect_contains(error_text([&] { load_task_model(dir.path().string()); }),
                  {"\"funnel\"", "\"bert\"", "\"roberta\""});
}

}  // namespace
}  // namespace berth
