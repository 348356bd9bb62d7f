// BertForMaskedLM against HF transformers' (tests/goldens/bert_mlm_goldens.py): logits, loss and gradients
// through load_task_model, the save_pretrained round trip, and masked-LM training through the Trainer.
#include "berth/model/bert_for_masked_lm.h"

#include "berth/io/safetensors.h"
#include "berth/model/auto_model.h"
#include "berth/train/trainer.h"

#include "support/test_support.h"
#include "support/tiny_training.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

namespace berth {
namespace {

std::string bert_mlm_dir() { return testing::golden_dir() + "/bert_mlm"; }

double bert_mlm_diff(const at::Tensor& actual, const at::Tensor& expected) {
  return (actual.detach().to(at::kDouble) - expected.to(at::kDouble)).abs().max().item<double>();
}

TEST(BertForMaskedLm, LogitsLossAndGradientsMatchTransformers) {
  auto loaded = load_task_model(bert_mlm_dir());  // architectures says BertForMaskedLM
  EXPECT_TRUE(loaded.report.clean()) << (loaded.report.warnings.empty() ? "" : loaded.report.warnings[0]);
  TaskModel& model = *loaded.model;
  EXPECT_EQ(model.info().task, ModelTask::MaskedLM);
  EXPECT_EQ(model.info().architecture, "BertForMaskedLM");
  model.module().eval();
  const auto golden = io::SafetensorsFile::open(bert_mlm_dir() + "/golden.safetensors");
  Batch batch;
  for (const char* name : {"input_ids", "attention_mask", "token_type_ids", "labels"})
    batch[name] = golden.tensor(name);
  const TaskOutput out = model.forward_batch(batch);
  EXPECT_LE(bert_mlm_diff(out.logits, golden.tensor("logits")), 1e-5);
  EXPECT_LE(bert_mlm_diff(out.loss, golden.tensor("loss")), 1e-5);
  out.loss.backward();
  size_t compared = 0;
  for (const auto& param : model.module().named_parameters()) {
    ASSERT_TRUE(golden.contains("grad." + param.key())) << param.key();
    EXPECT_LE(bert_mlm_diff(param.value().grad(), golden.tensor("grad." + param.key())), 1e-4) << param.key();
    ++compared;
  }
  // HF's named_parameters lists the tied output layer once, as the word embeddings: the same count.
  size_t golden_grads = 0;
  for (const std::string& name : golden.names()) golden_grads += name.rfind("grad.", 0) == 0;
  EXPECT_EQ(compared, golden_grads);
}

// The Trainer's loss-only forward decodes the labeled tokens only: their rows of HF's logits, HF's loss and
// gradients.
TEST(BertForMaskedLm, LossOnlyForwardDecodesTheLabeledTokensWithTransformersLossAndGradients) {
  auto loaded = load_task_model(bert_mlm_dir());
  TaskModel& model = *loaded.model;
  model.module().eval();
  const auto golden = io::SafetensorsFile::open(bert_mlm_dir() + "/golden.safetensors");
  Batch batch;
  for (const char* name : {"input_ids", "attention_mask", "token_type_ids", "labels"})
    batch[name] = golden.tensor(name);
  const at::Tensor rows = (batch.at("labels").reshape({-1}) != -100).nonzero().reshape({-1});
  ASSERT_LT(rows.numel(), batch.at("labels").numel());
  TaskOutput out;
  {
    const LossOnlyForward loss_only(model);
    out = model.forward_batch(batch);
  }
  const at::Tensor dense = golden.tensor("logits");
  ASSERT_EQ(out.logits.sizes(), (std::vector<int64_t>{rows.numel(), dense.size(-1)}));
  EXPECT_LE(bert_mlm_diff(out.logits, dense.reshape({-1, dense.size(-1)}).index_select(0, rows)), 1e-5);
  EXPECT_LE(bert_mlm_diff(out.loss, golden.tensor("loss")), 1e-5);
  out.loss.backward();
  for (const auto& param : model.module().named_parameters())
    EXPECT_LE(bert_mlm_diff(param.value().grad(), golden.tensor("grad." + param.key())), 1e-4) << param.key();
  // Labels that do not match the tokens: the shapes, and the fix.
  batch["labels"] = batch.at("labels").slice(1, 0, 3);
  const LossOnlyForward loss_only(model);
  testing::expect_contains(
      testing::error_text([&] { model.forward_batch(batch); }),
      {"BertForMaskedLM: labels have shape", "but input_ids", "Fix: give one label per token"});
}

TEST(BertForMaskedLm, SavesWhatTransformersSavesAndLoadsItBack) {
  testing::TempDir dir;
  auto loaded = load_task_model(bert_mlm_dir());
  loaded.model->save_pretrained(dir.file("saved"));
  const auto ours = io::SafetensorsFile::open(dir.file("saved/model.safetensors"));
  const auto theirs = io::SafetensorsFile::open(bert_mlm_dir() + "/model.safetensors");
  const auto our_names = ours.names();
  const auto their_names = theirs.names();
  EXPECT_EQ(std::set<std::string>(our_names.begin(), our_names.end()),
            std::set<std::string>(their_names.begin(), their_names.end()));
  auto again = load_task_model(dir.file("saved"));
  EXPECT_TRUE(again.report.clean());
  EXPECT_EQ(again.model->info().architecture, "BertForMaskedLM");
  for (const std::string& name : their_names)
    EXPECT_TRUE(ours.tensor(name).equal(theirs.tensor(name))) << name;
}

TEST(BertForMaskedLm, ClassificationFromAnMlmCheckpointGetsAFreshHead) {
  PretrainedOptions options;
  options.num_labels = 2;
  auto loaded = load_task_model(bert_mlm_dir(), options, ModelTask::SequenceClassification);
  EXPECT_EQ(loaded.model->info().architecture, "BertForSequenceClassification");
  // The encoder comes from the checkpoint; the pooler and classifier are new, the MLM head unused.
  EXPECT_FALSE(loaded.report.missing.empty());
  EXPECT_FALSE(loaded.report.unexpected.empty());
  testing::expect_contains(loaded.report.warnings.front() + loaded.report.warnings.back(), {"cls."});
}

}  // namespace
}  // namespace berth
