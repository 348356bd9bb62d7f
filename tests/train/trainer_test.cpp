// The Trainer end to end on a tiny BERT and synthetic data: determinism, bitwise resume (also of a tied GPT-2
// causal LM), placement of a model_init's model, checkpoints (rotation keeps the best, a crash mid-save loses
// nothing), HF output.
#include "berth/train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "berth/data/split_mix64.h"
#include "berth/model/auto_model.h"
#include "berth/model/model_presets.h"
#include "berth/model/pretrained.h"
#include "berth/placement/place.h"
#include "berth/train/checkpoint_dir.h"
#include "support/test_support.h"
#include "support/tiny_training.h"

namespace berth::train {
namespace {

namespace fs = std::filesystem;
using berth::testing::TempDir;

using berth::testing::synthetic_dataset;
using berth::testing::tiny_args;
using berth::testing::tiny_config;

struct Run {
  std::ostringstream console;
  std::unique_ptr<Trainer> trainer;
};

std::unique_ptr<Run> make_run(const TrainingArguments& args, double dropout = 0.1,
                              std::vector<std::shared_ptr<TrainerCallback>> callbacks = {},
                              ComputeMetrics compute_metrics = {}, ModelInit model_init = {}) {
  auto run = std::make_unique<Run>();
  TrainerOptions options;
  options.args = args;
  options.model_init = model_init ? std::move(model_init) : [dropout](const Trial*) {
    return std::shared_ptr<TaskModel>(BertForSequenceClassification(tiny_config(dropout)).ptr());
  };
  options.train_dataset = synthetic_dataset(60, 1);
  options.eval_dataset = synthetic_dataset(24, 2);
  options.callbacks = std::move(callbacks);
  options.compute_metrics = std::move(compute_metrics);
  options.console = &run->console;
  run->trainer = std::make_unique<Trainer>(std::move(options));
  return run;
}

std::map<std::string, at::Tensor> weights(const Trainer& trainer) {
  std::map<std::string, at::Tensor> out;
  for (const auto& item : trainer.model()->module().named_parameters())
    out[item.key()] = item.value().detach().clone();
  return out;
}

void expect_bitwise_equal(const std::map<std::string, at::Tensor>& a,
                          const std::map<std::string, at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, tensor] : a) EXPECT_TRUE(torch::equal(tensor, b.at(name))) << name;
}

// Stops the run after a given step, as a crash (or a Ctrl-C) would, after that step's checkpoint.
struct StopAt : TrainerCallback {
  explicit StopAt(int64_t step) : step(step) {}
  void on_step_end(const TrainingArguments&, TrainerState& state, TrainerControl& control) override {
    if (state.global_step == step) control.should_training_stop = true;
  }
  int64_t step;
};

TEST(Trainer, SameSeedGivesIdenticalWeightsAndAnotherSeedDoesNot) {
  TempDir dir;
  auto a = make_run(tiny_args(dir.file("a")));
  a->trainer->train();
  auto b = make_run(tiny_args(dir.file("b")));
  b->trainer->train();
  expect_bitwise_equal(weights(*a->trainer), weights(*b->trainer));
  TrainingArguments other = tiny_args(dir.file("c"));
  other.seed = 8;
  auto c = make_run(other);
  c->trainer->train();
  EXPECT_FALSE(torch::equal(weights(*a->trainer).begin()->second, weights(*c->trainer).begin()->second));
}

// The model a resume test trains: the tiny BERT classifier, or GPT-2 (gpt2-tiny narrowed to hidden 16) as a
// causal LM on the same texts, its lm_head tied to the embeddings; both with dropout 0.1.
ModelInit resume_model_init(const std::string& family) {
  if (family == "Bert") return {};
  return [](const Trial*) {
    PretrainedConfig config = model_preset("gpt2-tiny", tiny_config().vocab_size);
    config.set_int("n_embd", 16);
    return build_task_model(config, ModelTask::CausalLM);
  };
}

class TrainerResume : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainerResume, ContinuesBitForBit) {
  // Dropout on, accumulation over 2 batches, a resume in the middle of an epoch: weights, optimizer moments,
  // schedule, data order and the dropout RNG must all continue exactly.
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("straight"));
  args.gradient_accumulation_steps = 2;
  args.num_train_epochs = 3;
  args.warmup_steps = 2;
  const ModelInit init = resume_model_init(GetParam());
  auto straight = make_run(args, 0.1, {}, {}, init);
  straight->trainer->train();

  args.output_dir = dir.file("resumed");
  args.save_strategy = "steps";
  args.save_steps = 5;  // 4 steps per epoch: checkpoint-5 is one step into the second epoch
  auto first = make_run(args, 0.1, {std::make_shared<StopAt>(5)}, {}, init);
  first->trainer->train();
  ASSERT_TRUE(fs::exists(dir.file("resumed/checkpoint-5/optimizer.safetensors")));
  EXPECT_EQ(first->trainer->state().global_step, 5);

  auto second = make_run(args, 0.1, {}, {}, init);
  const TrainOutput out = second->trainer->train(std::string("latest"));
  EXPECT_EQ(out.global_step, straight->trainer->state().global_step);
  expect_bitwise_equal(weights(*straight->trainer), weights(*second->trainer));
}

INSTANTIATE_TEST_SUITE_P(Trainer, TrainerResume, ::testing::Values("Bert", "Gpt2"),
                         [](const auto& info) { return info.param; });

TEST(Trainer, ModelInitOnAnotherDeviceIsPlacedOrReported) {
  // meta stands in for a second device on a CPU-only machine (as in the placement tests): model_init
  // returns a CPU model for a run on meta.
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("out"));
  args.device = "meta";
  TrainerOptions options;
  options.args = args;
  options.model_init = [](const Trial*) { return BertForSequenceClassification(tiny_config()).ptr(); };
  std::ostringstream console;
  options.console = &console;
  Trainer moved(options);
  EXPECT_EQ(module_device(moved.model()->module()), c10::Device(c10::kMeta));
  berth::testing::expect_contains(console.str(), {"placement: moved", "to meta"});
  EXPECT_TRUE(berth::testing::contains(berth::testing::error_text([&] { moved.train(); }), "holds no data"));

  options.args.placement = "strict";
  const std::string report = berth::testing::error_text<PlacementError>([&] { Trainer strict(options); });
  berth::testing::expect_contains(report, {"meta", "cpu", "bert.embeddings.word_embeddings.weight"});
}

TEST(Trainer, RotationKeepsTheBestCheckpoint) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("out"));
  args.eval_strategy = "steps";
  args.eval_steps = 2;
  args.save_strategy = "steps";
  args.save_steps = 2;
  args.save_total_limit = 1;
  args.metric_for_best_model = "score";
  args.greater_is_better = true;
  args.load_best_model_at_end = true;
  // The first evaluation scores best; later ones get worse.
  auto evaluations = std::make_shared<int>(0);
  auto run = make_run(args, 0.1, {}, [evaluations](const EvalPrediction&) {
    return std::map<std::string, double>{{"score", 1.0 / (1 + (*evaluations)++)}};
  });
  run->trainer->train();
  const auto& state = run->trainer->state();
  ASSERT_TRUE(state.best_model_checkpoint);
  EXPECT_EQ(*state.best_model_checkpoint, dir.file("out/checkpoint-2"));
  std::vector<std::string> kept;
  for (const auto& [step, path] : list_checkpoints(dir.file("out")))
    kept.push_back(fs::path(path).filename());
  EXPECT_EQ(kept,
            (std::vector<std::string>{"checkpoint-2", "checkpoint-" + std::to_string(state.global_step)}));
  // load_best_model_at_end: the final model is checkpoint-2's.
  auto best = from_pretrained<BertForSequenceClassification>(dir.file("out/checkpoint-2")).model;
  for (const auto& item : best->named_parameters())
    EXPECT_TRUE(torch::equal(item.value(), run->trainer->model()->module().named_parameters()[item.key()]))
        << item.key();
}

TEST(Trainer, CrashDuringSaveLeavesThePreviousCheckpointLoadable) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("out"));
  args.save_strategy = "steps";
  args.save_steps = 2;
  auto run = make_run(args);
  int saves = 0;
  run->trainer->set_checkpoint_hook_for_testing([&](const std::string& tmp) {
    if (++saves == 2) throw std::runtime_error("simulated crash while writing " + tmp);
  });
  EXPECT_THROW(run->trainer->train(), std::runtime_error);
  const auto checkpoints = list_checkpoints(dir.file("out"));
  ASSERT_EQ(checkpoints.size(), 1u);
  EXPECT_EQ(checkpoints[0].first, 2);
  for (const auto& entry : fs::directory_iterator(dir.path() / "out"))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  // The surviving checkpoint resumes.
  auto resumed = make_run(args);
  EXPECT_GT(resumed->trainer->train(std::string("latest")).global_step, 2);
}

TEST(Trainer, FinalModelIsHfFormatWithMetricsFiles) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("out"));
  args.eval_strategy = "epoch";
  auto run = make_run(args);
  const TrainOutput out = run->trainer->train();
  run->trainer->save_metrics("train", out.metrics);
  const auto eval = run->trainer->evaluate();
  run->trainer->save_metrics("eval", eval);
  for (const char* key :
       {"eval_loss", "eval_accuracy", "eval_f1", "eval_precision", "eval_recall", "eval_f1_macro"})
    EXPECT_TRUE(eval.count(key)) << key;

  auto loaded = from_pretrained<BertForSequenceClassification>(dir.file("out"));
  EXPECT_TRUE(loaded.report.clean());
  EXPECT_EQ(loaded.model->config.id2label.at(1), "spam");
  const auto dataset = synthetic_dataset(4, 3);
  loaded.model->eval();
  run->trainer->model()->module().eval();
  auto ids = torch::tensor(dataset->encoding(0).ids).unsqueeze(0);
  EXPECT_TRUE(torch::equal(loaded.model->forward(ids).logits,
                           run->trainer->model()->forward_batch({{"input_ids", ids}}).logits));

  std::ifstream all(dir.file("out/all_results.json"));
  const auto json = nlohmann::json::parse(all);
  for (const char* key : {"train_runtime", "train_loss", "eval_accuracy", "eval_loss"})
    EXPECT_TRUE(json.contains(key)) << key;
  EXPECT_TRUE(fs::exists(dir.file("out/train_results.json")));
  EXPECT_TRUE(fs::exists(dir.file("out/eval_results.json")));
  EXPECT_TRUE(fs::exists(dir.file("out/training_args.json")));
  EXPECT_TRUE(fs::exists(dir.file("out/trainer_state.json")));
  EXPECT_TRUE(fs::exists(dir.file("out/log.jsonl")));
  // Loss is logged every logging_steps, with HF's keys.
  int64_t loss_entries = 0;
  for (const auto& entry : run->trainer->state().log_history)
    if (entry.count("loss")) {
      ++loss_entries;
      EXPECT_TRUE(entry.count("learning_rate") && entry.count("grad_norm") && entry.count("epoch"));
    }
  EXPECT_EQ(loss_entries, run->trainer->state().global_step / 2);
}

TEST(Trainer, LearnsTheSyntheticRule) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("out"));
  args.num_train_epochs = 15;
  auto run = make_run(args, 0.0);
  run->trainer->train();
  // Half the rows are positive: 0.5 is what a model that learnt nothing scores.
  const auto metrics = run->trainer->evaluate(synthetic_dataset(60, 1).get(), "train_set");
  EXPECT_GT(metrics.at("train_set_accuracy"), 0.9);
}

// HF's bf16 semantics: autocast around forward and loss, float32 master weights and AdamW state, so a bf16
// run follows the fp32 run's loss curve within bf16's rounding (8 mantissa bits: about 0.4% per matmul).
TEST(Trainer, Bf16TrainingEndsAtFp32sEvalLossWithinBf16Tolerance) {
  TempDir dir;
  std::map<std::string, double> final_loss, accuracy;
  for (const bool bf16 : {false, true}) {
    TrainingArguments args = tiny_args(dir.file(bf16 ? "bf16" : "fp32"));
    args.num_train_epochs = 15;
    args.bf16 = bf16;
    auto run = make_run(args, 0.0);
    run->trainer->train();
    for (const auto& p : run->trainer->model()->module().parameters())
      ASSERT_EQ(p.scalar_type(), torch::kFloat);
    const auto metrics = run->trainer->evaluate(synthetic_dataset(60, 1).get(), "train_set");
    final_loss[bf16 ? "bf16" : "fp32"] = metrics.at("train_set_loss");
    accuracy[bf16 ? "bf16" : "fp32"] = metrics.at("train_set_accuracy");
    RecordProperty(bf16 ? "bf16_final_loss" : "fp32_final_loss",
                   std::to_string(metrics.at("train_set_loss")));
  }
  EXPECT_NE(final_loss["bf16"], final_loss["fp32"]);  // the bf16 run really computed in bf16
  // The stated bound: 0.01 absolute after 120 steps (measured 0.660483 vs 0.660503 on an AVX2 EPYC).
  EXPECT_NEAR(final_loss["bf16"], final_loss["fp32"], 0.01);
  EXPECT_GT(accuracy["bf16"], 0.9);
  EXPECT_GT(accuracy["fp32"], 0.9);
}

TEST(Trainer, RefusesToTrainOverAnEarlierRun) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("out"));
  args.save_strategy = "epoch";
  make_run(args)->trainer->train();
  const std::string message = berth::testing::error_text([&] { make_run(args)->trainer->train(); });
  berth::testing::expect_contains(
      message, {"already holds", "--resume_from_checkpoint latest", "--overwrite_output_dir"});
}

TEST(Trainer, HyperparameterSearchRunsEveryGridTrialAndKeepsTheBest) {
  TempDir dir;
  TrainingArguments args = tiny_args(dir.file("search"));
  args.max_steps = 60;
  args.eval_strategy = "no";
  auto run = make_run(args, 0.0);
  const SearchSpace space =
      SearchSpace::from_json_text(R"({"learning_rate": [0.003, 1e-7], "weight_decay": [0.0]})");
  const BestRun best = run->trainer->hyperparameter_search(space, 0, Direction::Minimize, SearchMethod::Grid);
  // A learning rate of 1e-7 leaves the model where it started: the larger one must reach the lower eval loss.
  EXPECT_EQ(best.params.at("learning_rate"), "0.003");
  std::ifstream lines(dir.file("search/hp_search.jsonl"));
  std::vector<nlohmann::json> trials;
  std::string line;
  while (std::getline(lines, line)) trials.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].at("params").at("learning_rate"), "0.003");
  EXPECT_LT(trials[0].at("objective").get<double>(), trials[1].at("objective").get<double>());
  EXPECT_DOUBLE_EQ(best.objective, trials[0].at("objective").get<double>());
  EXPECT_TRUE(fs::exists(dir.file("search/run-0/model.safetensors")));
  EXPECT_TRUE(fs::exists(dir.file("search/run-1/model.safetensors")));
  const TrainingArguments best_args = TrainingArguments::load(dir.file("search/best_trial_args.json"));
  EXPECT_DOUBLE_EQ(best_args.learning_rate, 0.003);
  // The Trainer's own arguments are the base ones again.
  EXPECT_DOUBLE_EQ(run->trainer->args().learning_rate, 1e-3);
}

}  // namespace
}  // namespace berth::train
