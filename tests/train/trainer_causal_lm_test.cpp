// The Trainer trains a causal LM through the TaskModel interface: input ids become the labels (padding
// -100), evaluation reports HF's eval_loss and its perplexity without keeping (N, T, vocab) logits, texts
// pack into full blocks, and generate() continues a prompt greedily or by seeded sampling.
#include "berth/train/trainer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>

#include "berth/data/data_loader.h"
#include "berth/data/pack_blocks.h"
#include "berth/model/generate.h"
#include "berth/model/task_model.h"
#include "support/test_support.h"
#include "support/tiny_training.h"

namespace berth::train {
namespace {

constexpr int64_t kVocab = 12;  // 0 is padding; texts cycle through 1..10; 11 is an EOS that ends some texts

// A bigram language model: each position's logits come from its own token's embedding. Causal-LM loss as
// HF's ForCausalLMLoss: position t predicts label t+1, -100 ignored.
struct BigramLmImpl : torch::nn::Module, TaskModel {
  BigramLmImpl() {
    embed = register_module("embed", torch::nn::Embedding(kVocab, 16));
    head = register_module("head", torch::nn::Linear(16, kVocab));
  }
  torch::nn::Module& module() override { return *this; }
  // input_ids: (B, T) -> logits (B, T, V)
  TaskOutput forward_batch(const Batch& batch) override {
    const at::Tensor logits = head(embed(batch.at("input_ids")));
    auto labels = batch.find("labels");
    return {logits, labels == batch.end() ? at::Tensor() : loss(logits, labels->second)};
  }
  at::Tensor loss(const at::Tensor& logits, const at::Tensor& labels) override {
    const at::Tensor shifted = logits.slice(1, 0, -1).reshape({-1, kVocab});
    return torch::nn::functional::cross_entropy(
        shifted, labels.slice(1, 1).reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
  }
  TaskModelInfo info() const override {
    TaskModelInfo info{"BigramLM", "", {}, 64, "a bigram table"};
    info.task = ModelTask::CausalLM;
    return info;
  }
  void save_pretrained(const std::string&) const override {}
  std::vector<std::string> hook_blocks() const override { return {"embed", "head"}; }
  void set_layer_hooks(std::shared_ptr<LayerHooks>) override {}

  torch::nn::Embedding embed{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(BigramLm);

// Texts of 3..12 tokens counting 1..10 cyclically from a random start; every third ends with EOS.
std::shared_ptr<data::TokenizedDataset> cycle_texts(size_t rows, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<tokenizer::Encoding> encodings(rows);
  for (size_t row = 0; row < rows; ++row) {
    const auto length = 3 + static_cast<int64_t>(random() % 10);
    auto token = static_cast<int64_t>(1 + random() % 10);
    for (int64_t t = 0; t < length; ++t, token = token % 10 + 1) encodings[row].ids.push_back(token);
    if (row % 3 == 0) encodings[row].ids.push_back(kVocab - 1);
  }
  return std::make_shared<data::TokenizedDataset>(std::move(encodings), at::Tensor());
}

std::unique_ptr<Trainer> lm_trainer(const std::string& output_dir, std::ostream* console) {
  TrainerOptions options;
  options.args = berth::testing::tiny_args(output_dir);
  options.args.learning_rate = 0.05;
  options.args.num_train_epochs = 6;
  options.model_init = [](const Trial*) { return BigramLm().ptr(); };
  options.train_dataset = cycle_texts(96, 1);
  options.eval_dataset = cycle_texts(40, 2);
  options.console = console;
  return std::make_unique<Trainer>(std::move(options));
}

// HF's evaluation loop: each batch's mean loss counts once per row of the batch.
double hf_eval_loss(TaskModel& model, const data::TokenizedDataset& dataset, size_t batch_size) {
  torch::NoGradGuard no_grad;
  model.module().eval();
  double sum = 0;
  for (size_t begin = 0; begin < dataset.size(); begin += batch_size) {
    std::vector<size_t> rows;
    for (size_t row = begin; row < std::min(dataset.size(), begin + batch_size); ++row) rows.push_back(row);
    const Batch batch = data::collate(dataset, rows, 0, 0, data::BatchLabels::InputIds);
    sum += model.forward_batch(batch).loss.item<double>() * static_cast<double>(rows.size());
  }
  return sum / static_cast<double>(dataset.size());
}

TEST(TrainerCausalLm, TrainsOnItsInputIdsAndReportsHfLossAndPerplexity) {
  berth::testing::TempDir dir;
  std::ostringstream console;
  auto trainer = lm_trainer(dir.file("out"), &console);
  const auto untrained = trainer->evaluate();
  EXPECT_NEAR(untrained.at("eval_perplexity"), std::exp(untrained.at("eval_loss")), 1e-9);
  trainer->train();
  const auto trained = trainer->evaluate();
  EXPECT_LT(trained.at("eval_perplexity"), 0.4 * untrained.at("eval_perplexity")) << console.str();
  EXPECT_FALSE(trained.count("eval_accuracy"));  // no (N, T, vocab) logits were gathered for it
  const auto eval_data = cycle_texts(40, 2);
  const double expected = hf_eval_loss(*trainer->model(), *eval_data,
                                       static_cast<size_t>(trainer->args().per_device_eval_batch_size));
  EXPECT_NEAR(trained.at("eval_loss"), expected, 1e-5);
}

TEST(TrainerCausalLm, LabelsAreTheInputIdsWithPaddingIgnored) {
  const auto dataset = cycle_texts(4, 3);
  const Batch batch = data::collate(*dataset, {0, 1, 2, 3}, 0, 0, data::BatchLabels::InputIds);
  const at::Tensor ids = batch.at("input_ids");
  const at::Tensor labels = batch.at("labels");
  EXPECT_TRUE(labels.masked_select(ids != 0).equal(ids.masked_select(ids != 0)));
  EXPECT_TRUE((labels.masked_select(ids == 0) == -100).all().item<bool>());
  EXPECT_GT((ids == 0).sum().item<int64_t>(), 0);  // the rows differ in length: some padding was tested
}

TEST(TrainerCausalLm, PackingCutsTheConcatenatedTokensIntoFullBlocks) {
  const auto dataset = cycle_texts(10, 4);
  std::vector<int64_t> all;
  for (const auto& e : dataset->encodings()) all.insert(all.end(), e.ids.begin(), e.ids.end());
  const data::TokenizedDataset packed = data::pack_blocks(*dataset, 7);
  ASSERT_EQ(packed.size(), all.size() / 7);
  for (size_t block = 0; block < packed.size(); ++block) {
    const auto& e = packed.encoding(block);
    EXPECT_EQ(e.ids, std::vector<int64_t>(all.begin() + 7 * block, all.begin() + 7 * block + 7));
    EXPECT_EQ(e.attention_mask, std::vector<int64_t>(7, 1));
  }
  EXPECT_TRUE(berth::testing::contains(
      berth::testing::error_text([&] { data::pack_blocks(*dataset, all.size() + 1); }),
      "fewer than one block of " + std::to_string(all.size() + 1) + ". Fix: a smaller --block-size"));
}

TEST(TrainerCausalLm, GenerateContinuesGreedilyAndSamplesReproducibly) {
  berth::testing::TempDir dir;
  std::ostringstream console;
  auto trainer = lm_trainer(dir.file("out"), &console);
  trainer->train();
  TaskModel& model = *trainer->model();
  model.module().eval();
  GenerateOptions greedy;
  greedy.max_new_tokens = 5;
  EXPECT_EQ(generate(model, {3, 4}, greedy, c10::kCPU), (std::vector<int64_t>{5, 6, 7, 8, 9}));
  greedy.eos_token_id = 6;  // stops after the EOS it generates
  EXPECT_EQ(generate(model, {3, 4}, greedy, c10::kCPU), (std::vector<int64_t>{5, 6}));

  GenerateOptions sampled;
  sampled.do_sample = true;
  sampled.max_new_tokens = 12;
  sampled.temperature = 3.0;  // flat enough that two seeds differ
  sampled.seed = 7;
  const auto first = generate(model, {1}, sampled, c10::kCPU);
  EXPECT_EQ(generate(model, {1}, sampled, c10::kCPU), first);
  sampled.seed = 8;
  EXPECT_NE(generate(model, {1}, sampled, c10::kCPU), first);
  sampled.top_k = 1;  // only the most probable token left: sampling is greedy
  greedy.eos_token_id.reset();
  greedy.max_new_tokens = 12;
  EXPECT_EQ(generate(model, {1}, sampled, c10::kCPU), generate(model, {1}, greedy, c10::kCPU));

  greedy.max_new_tokens = 63;
  EXPECT_TRUE(
      berth::testing::contains(berth::testing::error_text([&] {
                                 generate(model, {1, 2}, greedy, c10::kCPU);
                               }),
                               "the prompt (2 tokens) plus max_new_tokens (63) exceeds the model's 64 "
                               "positions. Fix:"));
}

}  // namespace
}  // namespace berth::train
