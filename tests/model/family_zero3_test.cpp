// Every model family under ZeRO stage 3 (2 ranks as threads over Gloo): their layer-hook blocks partition
// every parameter, and logits and gradients equal the unpartitioned model's. Word embeddings tied to an
// output layer (a masked-LM decoder, a causal-LM head) are partitioned too: the tied layer is a second use
// of their block.
#include "berth/dist/flat_layout.h"
#include "berth/dist/zero3_parameters.h"
#include "berth/io/safetensors.h"
#include "berth/model/auto_model.h"

#include "support/flat_layouts.h"
#include "support/rank_threads.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using berth::ModelTask;

// A golden case: HF's model and batch in golden_dir()/<kind>/<name> (kind "encoders", "decoders" or "" for
// the BERT masked LM's own directory).
struct FamilyZero3Case {
  std::string kind;
  std::string name;
  ModelTask task;
  bool wide = false;  // encoders: a seeded fresh model with wider feed-forward weights
  std::string dir() const {
    return berth::testing::golden_dir() + "/" + (kind.empty() ? name : kind + "/" + name);
  }
};

berth::dist::FlatLayout family_zero3_layout(torch::nn::Module& model) {
  return berth::testing::module_flat_layout(model);
}

berth::dist::ZeroOptions family_zero3_options(int64_t threshold, bool overlap) {
  berth::dist::ZeroOptions options;
  options.stage = 3;
  options.stage3_param_persistence_threshold = threshold;
  options.overlap_comm = overlap;
  options.stage3_prefetch_bucket_size = 10000;  // about a layer ahead on these models
  return options;
}

berth::Batch family_zero3_batch(const FamilyZero3Case& c) {
  const auto golden = berth::io::SafetensorsFile::open(c.dir() + "/golden.safetensors");
  berth::Batch batch;
  for (const std::string& key : golden.names())
    if (key.rfind("grad.", 0) != 0 && key != "logits" && key != "loss") batch[key] = golden.tensor(key);
  return batch;
}

// The case's model: HF's weights, or (wide) a seeded fresh one whose feed-forward weights (32 x 128)
// outgrow the word embeddings (60 x 32).
std::shared_ptr<berth::TaskModel> family_zero3_model(const FamilyZero3Case& c) {
  if (!c.wide) return berth::load_task_model(c.dir(), {}, c.task).model;
  berth::PretrainedConfig config = berth::PretrainedConfig::load(c.dir() + "/config.json");
  config.set_int(config.model_type() == "distilbert" ? "hidden_dim" : "intermediate_size", 128);
  return berth::build_task_model(config, c.task, {true, 11});
}

// The unpartitioned model's logits, then its gradients in named_parameters order.
std::vector<at::Tensor> family_zero3_reference(const FamilyZero3Case& c) {
  auto model = family_zero3_model(c);
  model->module().eval();
  berth::TaskOutput out = model->forward_batch(family_zero3_batch(c));
  out.loss.backward();
  std::vector<at::Tensor> result{out.logits.detach()};
  for (const auto& p : model->module().parameters()) result.push_back(p.grad().clone());
  return result;
}

// Two ranks run two forward/backward passes of case `c` partitioned at `threshold` (then one without
// autograd); each compares with the reference and finds every partitioned parameter released between passes.
void family_zero3_matches(const FamilyZero3Case& c, int64_t threshold, bool overlap = false) {
  const std::vector<at::Tensor> reference = family_zero3_reference(c);
  const std::string what = c.name + " threshold " + std::to_string(threshold) + (overlap ? " overlap" : "");
  berth::testing::expect_ok(
      berth::testing::run_ranks(2, [&](int, std::shared_ptr<berth::dist::Communicator> comm) {
        auto model = family_zero3_model(c);
        model->module().eval();
        berth::dist::PartitionedParameters params(comm, family_zero3_options(threshold, overlap));
        params.partition(model->module(), family_zero3_layout(model->module()));
        const auto live = model->module().named_parameters();
        auto count_released = [&] {
          int64_t released = 0;
          for (const auto& p : live) released += p.value().numel() == 0 ? 1 : 0;
          return released;
        };
        const int64_t partitioned = count_released();
        EXPECT_GE(partitioned, 4) << what << ": ZeRO-3 partitioned next to nothing";
        for (int pass = 0; pass < 2; ++pass) {
          for (const auto& p : live) p.value().mutable_grad() = at::Tensor();
          berth::TaskOutput out = model->forward_batch(family_zero3_batch(c));
          EXPECT_LT(berth::testing::max_diff(out.logits, reference[0]), 1e-6) << what;
          out.loss.backward();
          for (size_t i = 0; i < live.size(); ++i) {
            ASSERT_TRUE(live[i].value().grad().defined()) << what << ": " << live[i].key();
            EXPECT_LT(berth::testing::max_diff(live[i].value().grad(), reference[i + 1]), 1e-6)
                << what << ": " << live[i].key();
          }
          EXPECT_EQ(count_released(), partitioned) << what << ": something stayed gathered after backward";
        }
        torch::NoGradGuard no_grad;
        EXPECT_LT(berth::testing::max_diff(model->forward_batch(family_zero3_batch(c)).logits, reference[0]),
                  1e-6)
            << what;
        EXPECT_EQ(count_released(), partitioned) << what << ": something stayed gathered after evaluation";
        const berth::dist::Zero3Stats stats = params.stats();
        EXPECT_EQ(stats.gathers, stats.releases) << what;
        EXPECT_EQ(stats.prefetches > 0, overlap) << what;
      }));
}

TEST(FamilyZero3, EveryEncoderHeadOfEveryFamilyMatchesTheUnpartitionedModel) {
  for (const std::string family : {"roberta", "distilbert", "electra", "modernbert", "deberta_v2"}) {
    for (const auto& [head, task] :
         {std::pair<std::string, ModelTask>{"_sequence_classification", ModelTask::SequenceClassification},
          {"_token_classification", ModelTask::TokenClassification},
          {"_question_answering", ModelTask::QuestionAnswering}})
      family_zero3_matches({"encoders", family + head, task}, 32);
  }
  // DeBERTa's relative-position table, read by every layer, and its convolution after the first layer.
  family_zero3_matches(
      {"encoders", "deberta_v2_unshared_sequence_classification", ModelTask::SequenceClassification}, 0,
      /*overlap=*/true);
}

// The tied decoder reads the word embeddings inside the head: a second use of the embeddings block, nested
// in the head's block. Partitioned at 32 elements (the embeddings included) and at 0 (everything), with and
// without prefetching.
TEST(FamilyZero3, MaskedLmHeadsPartitionTheTiedEmbeddings) {
  for (const std::string family : {"roberta", "distilbert", "electra", "modernbert", "deberta_v2",
                                   "deberta_v2_unshared", "deberta_v2_lm"}) {
    const FamilyZero3Case c{"encoders", family + "_masked_lm", ModelTask::MaskedLM};
    family_zero3_matches(c, 32);
    family_zero3_matches(c, 0, /*overlap=*/true);
    family_zero3_matches({"encoders", family + "_masked_lm", ModelTask::MaskedLM, /*wide=*/true}, 32, true);
  }
  family_zero3_matches({"", "bert_mlm", ModelTask::MaskedLM}, 32);
  family_zero3_matches({"", "bert_mlm", ModelTask::MaskedLM}, 0, /*overlap=*/true);
}

// A causal-LM head tied to the input embeddings (GPT-2's default, Llama's and Qwen2's tie_word_embeddings)
// is a second use of the embeddings block after the last layer; an untied Llama for contrast.
TEST(FamilyZero3, TiedCausalLmHeadsPartitionTheEmbeddings) {
  for (const std::string name : {"gpt2_causal_lm", "llama_causal_lm_tied_biases", "qwen2_causal_lm"}) {
    family_zero3_matches({"decoders", name, ModelTask::CausalLM}, 32);
    family_zero3_matches({"decoders", name, ModelTask::CausalLM}, 0, /*overlap=*/true);
  }
  family_zero3_matches({"decoders", "llama_causal_lm", ModelTask::CausalLM}, 0, /*overlap=*/true);
}

// Each use gathers its block once (no prefetching): a forward gathers as many times as hook_blocks() lists
// uses, the tied block twice, and the embeddings' weight stays one parameter under HF's name.
TEST(FamilyZero3, AForwardGathersOncePerUseOfABlock) {
  for (const FamilyZero3Case& c :
       {FamilyZero3Case{"decoders", "llama_causal_lm_tied_biases", ModelTask::CausalLM},
        FamilyZero3Case{"encoders", "roberta_masked_lm", ModelTask::MaskedLM}}) {
    berth::testing::expect_ok(
        berth::testing::run_ranks(2, [&](int, std::shared_ptr<berth::dist::Communicator> comm) {
          auto model = family_zero3_model(c);
          const std::vector<std::string> uses = model->hook_blocks();
          EXPECT_EQ(uses.back(), uses.front()) << c.name << ": the tied layer uses the embeddings again";
          berth::dist::PartitionedParameters params(comm, family_zero3_options(0, false));
          params.partition(model->module(), family_zero3_layout(model->module()));
          torch::NoGradGuard no_grad;
          model->forward_batch(family_zero3_batch(c));
          EXPECT_EQ(params.stats().gathers, static_cast<int64_t>(uses.size())) << c.name;
          EXPECT_EQ(params.stats().releases, params.stats().gathers) << c.name;
        }));
    int64_t embeddings = 0;
    for (const auto& item : family_zero3_model(c)->module().named_parameters())
      embeddings += item.key().find("embed_tokens.weight") != std::string::npos ||
                            item.key().find("word_embeddings.weight") != std::string::npos
                        ? 1
                        : 0;
    EXPECT_EQ(embeddings, 1) << c.name << ": a tied weight is one parameter";
  }
}

}  // namespace
