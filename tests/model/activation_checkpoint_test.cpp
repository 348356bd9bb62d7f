// Activation checkpointing: with it on, every family's loss and every parameter's gradient equal the run
// without it (dropout on: the recomputation redraws the forward's masks), each layer is recomputed once per
// backward (every_n_layers: layers 0, n, 2n, ...), nothing is recomputed without autograd or in evaluation,
// the recomputation runs under the forward's autocast, and under ZeRO-3 it gathers the layer again.
#include "berth/model/activation_checkpoint.h"

#include "berth/dist/flat_layout.h"
#include "berth/dist/zero3_parameters.h"
#include "berth/io/safetensors.h"
#include "berth/model/auto_model.h"

#include "support/flat_layouts.h"
#include "support/rank_threads.h"
#include "support/test_support.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cctype>

namespace {

using berth::ModelTask;

// A golden model directory (under golden_dir()) and its task; `build` builds a fresh seeded model of that
// config for `task` instead of loading the weights (BERT's sequence-classification and masked-LM classes).
struct CheckpointCase {
  std::string dir;
  ModelTask task;
  bool build = false;
};

std::string checkpoint_case_path(const CheckpointCase& c) {
  return berth::testing::golden_dir() + "/" + c.dir;
}

std::shared_ptr<berth::TaskModel> checkpoint_case_model(const CheckpointCase& c) {
  if (!c.build) return berth::load_task_model(checkpoint_case_path(c), {}, c.task).model;
  const auto config = berth::PretrainedConfig::load(checkpoint_case_path(c) + "/config.json");
  return berth::build_task_model(config, c.task, {true, 5});
}

// The golden batch (inputs and labels); a built model's labels fit its task instead.
berth::Batch checkpoint_case_batch(const CheckpointCase& c) {
  const auto golden = berth::io::SafetensorsFile::open(checkpoint_case_path(c) + "/golden.safetensors");
  berth::Batch batch;
  for (const std::string& key : golden.names())
    if (key.rfind("grad.", 0) != 0 && key != "logits" && key != "loss") batch[key] = golden.tensor(key);
  const at::Tensor& ids = batch.at("input_ids");
  if (c.build && c.task == ModelTask::SequenceClassification)
    batch["labels"] = torch::arange(ids.size(0)) % 2;
  if (c.build && c.task == ModelTask::MaskedLM) batch["labels"] = ids.clone();
  return batch;
}

// The transformer layers among a model's hook blocks: those whose name ends in a number ("....layer.3").
int64_t checkpoint_case_layers(berth::TaskModel& model) {
  int64_t layers = 0;
  for (const std::string& block : model.hook_blocks())
    layers += std::isdigit(static_cast<unsigned char>(block.back())) ? 1 : 0;
  return layers;
}

struct CheckpointRun {
  at::Tensor loss;
  std::vector<at::Tensor> grads;  // named_parameters order
  at::Tensor next_draw;           // torch::rand after the step: the generator state it leaves
  int64_t recomputations = 0;
};

// One training-mode forward and backward from seed 11, checkpointing as `how` says.
CheckpointRun checkpoint_case_run(const CheckpointCase& c, const berth::GradientCheckpointing& how) {
  auto model = checkpoint_case_model(c);
  model->module().train();
  model->set_gradient_checkpointing(how);
  const berth::Batch batch = checkpoint_case_batch(c);
  torch::manual_seed(11);
  const int64_t before = berth::checkpoint_recomputations();
  CheckpointRun run;
  run.loss = model->forward_batch(batch).loss;
  run.loss.backward();
  run.recomputations = berth::checkpoint_recomputations() - before;
  for (const auto& p : model->module().parameters())
    run.grads.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
  run.next_draw = torch::rand({4});
  return run;
}

const std::vector<CheckpointCase>& checkpoint_cases() {
  static const std::vector<CheckpointCase> cases = {
      {"bert_mlm", ModelTask::MaskedLM},
      {"encoders/bert_token_classification", ModelTask::SequenceClassification, true},
      {"encoders/bert_question_answering", ModelTask::QuestionAnswering},
      {"encoders/roberta_masked_lm", ModelTask::MaskedLM},
      {"encoders/xlm_roberta_sequence_classification", ModelTask::SequenceClassification},
      {"encoders/distilbert_token_classification", ModelTask::TokenClassification},
      {"encoders/electra_sequence_classification", ModelTask::SequenceClassification},
      {"encoders/modernbert_masked_lm", ModelTask::MaskedLM},
      {"decoders/gpt2_causal_lm", ModelTask::CausalLM},
      {"decoders/llama_causal_lm", ModelTask::CausalLM},
      {"decoders/mistral_sequence_classification", ModelTask::SequenceClassification},
      {"decoders/qwen2_causal_lm", ModelTask::CausalLM},
  };
  return cases;
}

TEST(ActivationCheckpoint, EveryFamilyGivesTheSameLossAndGradientsWithDropoutOn) {
  for (const CheckpointCase& c : checkpoint_cases()) {
    SCOPED_TRACE(c.dir);
    const CheckpointRun plain = checkpoint_case_run(c, {});
    const CheckpointRun checkpointed = checkpoint_case_run(c, {true, 1});
    EXPECT_EQ(plain.recomputations, 0);
    EXPECT_EQ(checkpointed.recomputations, checkpoint_case_layers(*checkpoint_case_model(c)));
    EXPECT_GE(checkpointed.recomputations, 2);
    EXPECT_LE(std::abs(plain.loss.item<double>() - checkpointed.loss.item<double>()), 1e-6);
    ASSERT_EQ(plain.grads.size(), checkpointed.grads.size());
    for (size_t i = 0; i < plain.grads.size(); ++i) {
      ASSERT_EQ(plain.grads[i].defined(), checkpointed.grads[i].defined()) << "parameter " << i;
      if (plain.grads[i].defined())
        EXPECT_LE(berth::testing::max_diff(plain.grads[i], checkpointed.grads[i]), 1e-6) << "parameter " << i;
    }
    // The recomputation's draws are undone: later code draws what it would have without checkpointing.
    EXPECT_TRUE(torch::equal(plain.next_draw, checkpointed.next_draw));
  }
}

// The same comparison fails when the recomputation draws new dropout masks: the test can see a wrong
// gradient (the model has dropout, and a second forward from the advanced generator differs).
TEST(ActivationCheckpoint, DropoutMakesAnUnseededSecondForwardDiffer) {
  const CheckpointCase c{"encoders/roberta_masked_lm", ModelTask::MaskedLM};
  auto model = checkpoint_case_model(c);
  model->module().train();
  torch::manual_seed(11);
  const at::Tensor first = model->forward_batch(checkpoint_case_batch(c)).logits;
  const at::Tensor second = model->forward_batch(checkpoint_case_batch(c)).logits;
  EXPECT_GT(berth::testing::max_diff(first, second), 1e-3);
}

TEST(ActivationCheckpoint, EveryNthLayerFromTheFirst) {
  const CheckpointCase c{"encoders/modernbert_masked_lm", ModelTask::MaskedLM};  // 4 layers
  const CheckpointRun plain = checkpoint_case_run(c, {});
  for (const auto& [every, layers] : {std::pair<int64_t, int64_t>{2, 2}, {3, 2}, {4, 1}, {5, 1}}) {
    const CheckpointRun run = checkpoint_case_run(c, {true, every});
    EXPECT_EQ(run.recomputations, layers) << "every " << every;
    for (size_t i = 0; i < plain.grads.size(); ++i)
      EXPECT_LE(berth::testing::max_diff(plain.grads[i], run.grads[i]), 1e-6) << "every " << every;
  }
}

TEST(ActivationCheckpoint, NothingIsRecomputedWithoutAutogradOrInEvaluation) {
  const CheckpointCase c{"decoders/llama_causal_lm", ModelTask::CausalLM};
  auto model = checkpoint_case_model(c);
  model->set_gradient_checkpointing({true, 1});
  const int64_t before = berth::checkpoint_recomputations();
  model->module().train();
  {
    torch::NoGradGuard no_grad;
    model->forward_batch(checkpoint_case_batch(c));
  }
  model->module().eval();  // HF checkpoints only while training
  model->forward_batch(checkpoint_case_batch(c)).loss.backward();
  EXPECT_EQ(berth::checkpoint_recomputations(), before);
}

// torch's reentrant checkpoint gives a block whose input needs no gradient no parameter gradients; berth's
// passes the parameters as inputs, which keeps the block in the graph.
TEST(ActivationCheckpoint, ABlockWhoseInputNeedsNoGradientStillGetsParameterGradients) {
  torch::manual_seed(3);
  torch::nn::Linear linear(4, 3);
  const at::Tensor x = torch::randn({2, 4});
  linear(x).pow(2).sum().backward();
  const at::Tensor expected = linear->weight.grad().clone();
  linear->weight.mutable_grad() = at::Tensor();
  const at::Tensor out = berth::checkpoint([linear](const at::Tensor& in) mutable { return linear(in); }, x,
                                           linear->parameters());
  ASSERT_TRUE(out.requires_grad());
  out.pow(2).sum().backward();
  ASSERT_TRUE(linear->weight.grad().defined());
  EXPECT_LE(berth::testing::max_diff(linear->weight.grad(), expected), 1e-7);
}

// Autocast's thread-local switches, set for a scope.
struct CheckpointAutocast {
  CheckpointAutocast() {
    at::autocast::set_autocast_enabled(at::kCPU, true);
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~CheckpointAutocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(at::kCPU, false);
  }
};

// The Trainer's autocast guard ends before backward; the recomputation must still run in bfloat16, as the
// forward did, or its gradients are float32 ones that differ from the bfloat16 forward's.
TEST(ActivationCheckpoint, TheRecomputationRunsUnderTheForwardsAutocast) {
  torch::manual_seed(3);
  torch::nn::Linear linear(16, 16);
  const at::Tensor x = torch::randn({8, 16}).requires_grad_(true);
  auto run = [&](bool checkpointed) {
    linear->weight.mutable_grad() = at::Tensor();
    at::Tensor out;
    {
      const CheckpointAutocast autocast;
      auto fn = [linear](const at::Tensor& in) mutable { return torch::gelu(linear(in)); };
      out = checkpointed ? berth::checkpoint(fn, x, linear->parameters()) : fn(x);
    }
    EXPECT_EQ(out.scalar_type(), at::kBFloat16);
    out.to(at::kFloat).pow(2).sum().backward();
    return linear->weight.grad().clone();
  };
  const at::Tensor plain = run(false);
  const at::Tensor checkpointed = run(true);
  EXPECT_LE(berth::testing::max_diff(plain, checkpointed), 1e-6);
  // Recomputed in float32 the gradient differs by bfloat16's rounding: the comparison can fail.
  linear->weight.mutable_grad() = at::Tensor();
  torch::gelu(linear(x)).pow(2).sum().backward();
  EXPECT_GT(berth::testing::max_diff(plain, linear->weight.grad()), 1e-4);
}

berth::dist::FlatLayout checkpoint_layout(torch::nn::Module& model) {
  return berth::testing::module_flat_layout(model);
}

// A RoBERTa masked LM and a tied Llama without dropout (the two ranks are threads sharing torch's generator),
// trained under ZeRO-3 with everything partitioned: the recomputation runs between the gather that starts a
// layer's backward and the release that ends it, and the gradients equal the plain unpartitioned model's.
TEST(ActivationCheckpoint, Zero3GathersEachLayerAgainForItsRecomputation) {
  for (const CheckpointCase& c :
       {CheckpointCase{"encoders/roberta_masked_lm", ModelTask::MaskedLM, true},
        CheckpointCase{"decoders/llama_causal_lm_tied_biases", ModelTask::CausalLM}}) {
    SCOPED_TRACE(c.dir);
    auto make_model = [&] {
      auto config = berth::PretrainedConfig::load(checkpoint_case_path(c) + "/config.json");
      for (const char* field : {"hidden_dropout_prob", "attention_probs_dropout_prob", "attention_dropout"})
        if (config.has(field)) config.set_number(field, 0.0);
      auto model = berth::build_task_model(config, c.task, {true, 5});
      model->module().train();
      return model;
    };
    const berth::Batch batch = checkpoint_case_batch(c);
    auto reference = make_model();
    reference->forward_batch(batch).loss.backward();
    const auto expected = reference->module().parameters();
    const int64_t layers = checkpoint_case_layers(*reference);
    const int64_t before = berth::checkpoint_recomputations();
    berth::testing::expect_ok(
        berth::testing::run_ranks(2, [&](int, std::shared_ptr<berth::dist::Communicator> comm) {
          auto model = make_model();
          model->set_gradient_checkpointing({true, 1});
          berth::dist::ZeroOptions options;
          options.stage = 3;
          options.stage3_param_persistence_threshold = 0;
          berth::dist::PartitionedParameters params(comm, options);
          params.partition(model->module(), checkpoint_layout(model->module()));
          const auto live = model->module().parameters();
          auto released = [&] {
            int64_t count = 0;
            for (const auto& p : live) count += p.numel() == 0 ? 1 : 0;
            return count;
          };
          const int64_t partitioned = released();
          EXPECT_GE(partitioned, 4);
          model->forward_batch(batch).loss.backward();
          for (size_t i = 0; i < live.size(); ++i) {
            ASSERT_TRUE(live[i].grad().defined()) << "parameter " << i;
            EXPECT_LE(berth::testing::max_diff(live[i].grad(), expected[i].grad()), 1e-6)
                << "parameter " << i;
          }
          EXPECT_EQ(released(), partitioned) << "a layer stayed gathered after backward";
          EXPECT_EQ(params.stats().gathers, params.stats().releases);
        }));
    EXPECT_EQ(berth::checkpoint_recomputations() - before, 2 * layers);
  }
}

}  // namespace
