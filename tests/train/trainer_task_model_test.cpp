// The Trainer trains any TaskModel: a toy bag-of-embeddings classifier that is not BERT trains, evaluates,
// saves its best checkpoint and predicts through it, and ZeRO stage 3 shards it through its own hook blocks.
#include "berth/train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "berth/core/atomic_file.h"
#include "berth/io/safetensors.h"
#include "berth/model/task_model.h"
#include "support/test_support.h"
#include "support/tiny_training.h"

namespace berth::train {
namespace {

namespace fs = std::filesystem;
using berth::testing::synthetic_dataset;
using berth::testing::TempDir;

// Token embeddings summed over the unmasked positions (a bag of words: the task's marker token adds the same
// vector to every text that has it), then a linear head: two hook blocks, "embed" and "head", and none of
// BERT's names.
struct ToyClassifierImpl : torch::nn::Module, TaskModel {
  ToyClassifierImpl() {
    embed = register_module("embed", torch::nn::Embedding(40, 8));
    head = register_module("head", torch::nn::Linear(8, 2));
  }

  torch::nn::Module& module() override { return *this; }

  // input_ids, attention_mask: (B, T) -> logits (B, 2)
  TaskOutput forward_batch(const Batch& batch) override {
    ++(loss_only() ? loss_only_forwards : full_forwards);
    const at::Tensor mask = batch.at("attention_mask").unsqueeze(-1).to(at::kFloat);  // (B, T, 1)
    const at::Tensor tokens = run_block("embed", batch.at("input_ids"), [&](const at::Tensor& ids) {
      return embed(ids);  // (B, T, 8)
    });
    const at::Tensor pooled = (tokens * mask).sum(1);  // (B, 8)
    const at::Tensor logits = run_block("head", pooled, [&](const at::Tensor& x) { return head(x); });
    auto labels = batch.find("labels");
    return {logits, labels == batch.end() ? at::Tensor() : loss(logits, labels->second)};
  }

  at::Tensor loss(const at::Tensor& logits, const at::Tensor& labels) override {
    return torch::nn::functional::cross_entropy(logits, labels);
  }

  TaskModelInfo info() const override {
    return {"ToyClassifier", kSingleLabelClassification, {"ham", "spam"}, 32, "a bag of 8-wide embeddings"};
  }

  void save_pretrained(const std::string& dir) const override {
    fs::create_directories(dir);
    std::map<std::string, at::Tensor> tensors;
    for (const auto& item : named_parameters()) tensors[item.key()] = item.value().detach();
    io::save_safetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
    write_file_atomically(dir + "/config.json", std::string(R"({"architectures": ["ToyClassifier"]})"));
  }

  std::vector<std::string> hook_blocks() const override { return {"embed", "head"}; }
  void set_layer_hooks(std::shared_ptr<LayerHooks> hooks) override { hooks_ = std::move(hooks); }

  at::Tensor run_block(const std::string& block, const at::Tensor& input,
                       const std::function<at::Tensor(const at::Tensor&)>& body) {
    if (!hooks_) return body(input);
    ++hooked_blocks;
    return hooks_->after_forward(block, body(hooks_->before_forward(block, input)));
  }

  torch::nn::Embedding embed{nullptr};
  torch::nn::Linear head{nullptr};
  int64_t hooked_blocks = 0;       // blocks run with hooks installed (ZeRO-3's)
  int64_t loss_only_forwards = 0;  // forward_batch calls under LossOnlyForward
  int64_t full_forwards = 0;

 private:
  std::shared_ptr<LayerHooks> hooks_;
};
TORCH_MODULE(ToyClassifier);

TrainingArguments toy_args(const std::string& output_dir) {
  TrainingArguments args = berth::testing::tiny_args(output_dir);
  args.learning_rate = 0.02;
  args.num_train_epochs = 4;
  return args;
}

std::unique_ptr<Trainer> toy_trainer(const TrainingArguments& args, std::ostream* console) {
  TrainerOptions options;
  options.args = args;
  options.model_init = [](const Trial*) { return ToyClassifier().ptr(); };
  options.train_dataset = synthetic_dataset(64, 1);
  options.eval_dataset = synthetic_dataset(32, 2);
  options.console = console;
  return std::make_unique<Trainer>(std::move(options));
}

TEST(TrainerTaskModel, ATaskModelThatIsNotBertTrainsEvaluatesSavesAndPredicts) {
  TempDir dir;
  TrainingArguments args = toy_args(dir.file("out"));
  args.eval_strategy = "epoch";
  args.save_strategy = "epoch";
  args.load_best_model_at_end = true;
  std::ostringstream console;
  auto trainer = toy_trainer(args, &console);
  const double untrained = trainer->evaluate().at("eval_loss");
  const TrainOutput result = trainer->train();
  EXPECT_EQ(result.global_step, 32);  // 64 rows in batches of 8, 4 epochs
  const auto metrics = trainer->evaluate();
  EXPECT_LT(metrics.at("eval_loss"), 0.8 * untrained) << console.str();
  EXPECT_GE(metrics.at("eval_accuracy"), 0.75) << console.str();

  // The best checkpoint and the final model hold the toy's own tensors, as its save_pretrained wrote them.
  ASSERT_TRUE(trainer->state().best_model_checkpoint.has_value());
  trainer->save_model();
  for (const std::string& saved : {*trainer->state().best_model_checkpoint, dir.file("out")}) {
    const auto tensors = io::load_safetensors(saved + "/model.safetensors");
    EXPECT_EQ(tensors.size(), 3u) << saved;
    EXPECT_TRUE(tensors.count("embed.weight") && tensors.count("head.bias")) << saved;
  }
  const PredictionOutput prediction = trainer->predict(*synthetic_dataset(16, 3));
  EXPECT_EQ(prediction.predictions.sizes(), (std::vector<int64_t>{16}));
  EXPECT_EQ(prediction.probabilities.sizes(), (std::vector<int64_t>{16, 2}));
  EXPECT_TRUE(prediction.metrics.count("test_accuracy"));
  trainer->write_report();
  std::ifstream report(dir.file("out/report.html"));
  const std::string html((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(berth::testing::contains(html, "ToyClassifier, a bag of 8-wide embeddings"));
}

// The training steps read only the loss, so they ask for a loss-only forward (a masked LM then decodes its
// labeled tokens alone); evaluation reads the logits, and so does a step under label smoothing.
TEST(TrainerTaskModel, TrainingStepsRunLossOnlyUnlessLabelSmoothingReadsTheLogits) {
  TempDir dir;
  for (const double smoothing : {0.0, 0.1}) {
    TrainingArguments args = toy_args(dir.file("out"));
    args.num_train_epochs = 1;
    args.label_smoothing_factor = smoothing;
    std::ostringstream console;
    auto trainer = toy_trainer(args, &console);
    trainer->train();     // 64 rows in batches of 8
    trainer->evaluate();  // 32 rows
    auto& toy = dynamic_cast<ToyClassifierImpl&>(*trainer->model());
    EXPECT_FALSE(toy.loss_only());
    EXPECT_EQ(toy.loss_only_forwards, smoothing == 0 ? 8 : 0) << "label_smoothing_factor " << smoothing;
    const int64_t eval_batches = 32 / args.per_device_eval_batch_size;
    EXPECT_EQ(toy.full_forwards, (smoothing == 0 ? 0 : 8) + eval_batches)
        << "label_smoothing_factor " << smoothing;
  }
}

std::map<std::string, at::Tensor> trained_weights(const TrainingArguments& args, std::ostream* console,
                                                  int64_t* hooked_blocks) {
  auto trainer = toy_trainer(args, console);
  trainer->train();
  std::map<std::string, at::Tensor> out;
  for (const auto& item : trainer->model()->module().named_parameters())
    out[item.key()] = item.value().detach().clone();
  *hooked_blocks = dynamic_cast<ToyClassifierImpl&>(trainer->model()->module()).hooked_blocks;
  return out;
}

// Every parameter over the threshold of 0 elements is partitioned into the toy's two blocks; on one rank
// the gathered values are the whole parameters, so training matches the unsharded run.
TEST(TrainerTaskModel, ZeroStage3ShardsATaskModelThroughItsOwnBlocks) {
  TempDir dir;
  TrainingArguments args = toy_args(dir.file("local"));
  std::ostringstream local_console, zero_console;
  int64_t local_hooks = 0, zero_hooks = 0;
  const auto local = trained_weights(args, &local_console, &local_hooks);
  args.output_dir = dir.file("zero3");
  args.deepspeed = R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                       "gradient_clipping": "auto",
                       "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}})";
  const auto zero3 = trained_weights(args, &zero_console, &zero_hooks);
  EXPECT_TRUE(berth::testing::contains(zero_console.str(), "memory per rank (zero-3")) << zero_console.str();
  EXPECT_EQ(local_hooks, 0);
  EXPECT_GT(zero_hooks, 0);
  ASSERT_EQ(local.size(), zero3.size());
  for (const auto& [name, value] : local)
    EXPECT_TRUE(torch::allclose(value, zero3.at(name), 1e-5, 1e-6)) << name;
}

}  // namespace
}  // namespace berth::train
