// The encoder families under ZeRO stage 3 (2 ranks as threads over Gloo): their layer-hook blocks partition
// every parameter, and logits and gradients equal the unpartitioned model's; a masked-LM model's embeddings,
// read again by its tied decoder, must stay whole and ZeRO-3 says so.
#include "berth/dist/flat_layout.h"
#include "berth/dist/zero3_parameters.h"
#include "berth/io/safetensors.h"
#include "berth/model/auto_model.h"

#include "support/rank_threads.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using berth::ModelTask;

std::string encoder_zero3_dir(const std::string& name) {
  return berth::testing::golden_dir() + "/encoders/" + name;
}

berth::dist::FlatLayout encoder_zero3_layout(torch::nn::Module& model) {
  std::vector<std::string> names;
  std::vector<at::Tensor> params;
  for (const auto& item : model.named_parameters()) {
    names.push_back(item.key());
    params.push_back(item.value());
  }
  return berth::dist::make_flat_layout(names, params);
}

berth::dist::ZeroOptions encoder_zero3_options(int64_t threshold) {
  berth::dist::ZeroOptions options;
  options.stage = 3;
  options.stage3_param_persistence_threshold = threshold;
  return options;
}

berth::Batch encoder_zero3_batch(const std::string& name) {
  const auto golden = berth::io::SafetensorsFile::open(encoder_zero3_dir(name) + "/golden.safetensors");
  berth::Batch batch;
  for (const std::string& key : golden.names())
    if (key.rfind("grad.", 0) != 0 && key != "logits" && key != "loss") batch[key] = golden.tensor(key);
  return batch;
}

// Case `name`'s model: HF's weights, or (wide) a seeded fresh one whose feed-forward weights (32 x 128)
// outgrow the word embeddings (60 x 32), so a threshold keeping the embeddings whole still partitions them.
std::shared_ptr<berth::TaskModel> encoder_zero3_model(const std::string& name, ModelTask task, bool wide) {
  if (!wide) return berth::load_task_model(encoder_zero3_dir(name), {}, task).model;
  berth::PretrainedConfig config = berth::PretrainedConfig::load(encoder_zero3_dir(name) + "/config.json");
  config.set_int(config.model_type() == "distilbert" ? "hidden_dim" : "intermediate_size", 128);
  return berth::build_task_model(config, task, {true, 11});
}

// The unpartitioned model's logits, then its gradients in named_parameters order.
std::vector<at::Tensor> encoder_zero3_reference(const std::string& name, ModelTask task, bool wide) {
  auto model = encoder_zero3_model(name, task, wide);
  model->module().eval();
  berth::TaskOutput out = model->forward_batch(encoder_zero3_batch(name));
  out.loss.backward();
  std::vector<at::Tensor> result{out.logits.detach()};
  for (const auto& p : model->module().parameters()) result.push_back(p.grad().clone());
  return result;
}

// Two ranks train one step of case `name` partitioned at `threshold`; each compares with the reference.
void encoder_zero3_matches(const std::string& name, ModelTask task, int64_t threshold, bool wide = false) {
  const std::vector<at::Tensor> reference = encoder_zero3_reference(name, task, wide);
  berth::testing::expect_ok(
      berth::testing::run_ranks(2, [&](int, std::shared_ptr<berth::dist::Communicator> comm) {
        auto model = encoder_zero3_model(name, task, wide);
        model->module().eval();
        berth::dist::PartitionedParameters params(comm, encoder_zero3_options(threshold));
        params.partition(model->module(), encoder_zero3_layout(model->module()));
        int64_t released = 0;
        for (const auto& p : model->module().parameters()) released += p.numel() == 0 ? 1 : 0;
        EXPECT_GE(released, 4) << name << ": ZeRO-3 partitioned next to nothing";
        berth::TaskOutput out = model->forward_batch(encoder_zero3_batch(name));
        EXPECT_LT(berth::testing::max_diff(out.logits, reference[0]), 1e-6) << name;
        out.loss.backward();
        const auto live = model->module().named_parameters();
        for (size_t i = 0; i < live.size(); ++i) {
          ASSERT_TRUE(live[i].value().grad().defined()) << name << ": " << live[i].key();
          EXPECT_LT(berth::testing::max_diff(live[i].value().grad(), reference[i + 1]), 1e-6)
              << name << ": " << live[i].key();
        }
      }));
}

TEST(EncoderZero3, EveryHeadOfEveryFamilyMatchesTheUnpartitionedModel) {
  for (const std::string family : {"roberta", "distilbert", "electra", "modernbert"}) {
    encoder_zero3_matches(family + "_sequence_classification", ModelTask::SequenceClassification, 32);
    encoder_zero3_matches(family + "_token_classification", ModelTask::TokenClassification, 32);
    encoder_zero3_matches(family + "_question_answering", ModelTask::QuestionAnswering, 32);
  }
}

TEST(EncoderZero3, MaskedLmKeepsTheTiedEmbeddingsWhole) {
  // The embeddings are in no block: below their size ZeRO-3 refuses, naming the tensor and the fix.
  const std::vector<std::string> errors =
      berth::testing::run_ranks(2, [&](int, std::shared_ptr<berth::dist::Communicator> comm) {
        auto model =
            berth::load_task_model(encoder_zero3_dir("roberta_masked_lm"), {}, ModelTask::MaskedLM).model;
        berth::dist::PartitionedParameters params(comm, encoder_zero3_options(32));
        params.partition(model->module(), encoder_zero3_layout(model->module()));
      });
  for (const std::string& error : errors)
    berth::testing::expect_contains(error, {"roberta.embeddings.", "stage3_param_persistence_threshold"});
  // Whole (vocab 60 x hidden 32 at most), the tied decoder reads them and every gradient matches, with the
  // wider feed-forward weights partitioned.
  for (const std::string family : {"roberta", "distilbert", "electra", "modernbert"})
    encoder_zero3_matches(family + "_masked_lm", ModelTask::MaskedLM, 60 * 32, /*wide=*/true);
}

}  // namespace
