// Tests for BertModel / BertForSequenceClassification: HF names, HF's init, placement, input checks, losses.
#include "berth/model/bert_for_sequence_classification.h"

#include "berth/placement/inspect.h"
#include "berth/placement/place.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using berth::BertConfig;
using berth::testing::error_text;
using berth::testing::expect_contains;

BertConfig tiny_config() {
  BertConfig c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 24;
  c.max_position_embeddings = 12;
  c.set_labels({"ham", "spam", "phish"});
  return c;
}

std::vector<std::string> expected_names(int layers, const std::string& prefix) {
  std::vector<std::string> names = {
      "embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
      "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"};
  for (int i = 0; i < layers; ++i) {
    const std::string layer = "encoder.layer." + std::to_string(i) + ".";
    for (const char* part :
         {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
          "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"}) {
      names.push_back(layer + part + ".weight");
      names.push_back(layer + part + ".bias");
    }
  }
  names.push_back("pooler.dense.weight");
  names.push_back("pooler.dense.bias");
  for (auto& name : names) name = prefix + name;
  return names;
}

std::vector<std::string> state_names(const torch::nn::Module& module) {
  std::vector<std::string> names;
  for (const auto& t : berth::module_tensors(module)) names.push_back(t.name);
  return names;
}

TEST(BertModel, ParameterNamesAreHfsAndThereAreNoBuffers) {
  berth::BertModel base(tiny_config());
  EXPECT_EQ(state_names(*base), expected_names(2, ""));
  berth::BertForSequenceClassification model(tiny_config());
  std::vector<std::string> names = expected_names(2, "bert.");
  names.push_back("classifier.weight");
  names.push_back("classifier.bias");
  EXPECT_EQ(state_names(*model), names);
  // HF's position_ids / token_type_ids buffers are non-persistent: not part of the state.
  EXPECT_EQ(model->buffers().size(), 0u);
  EXPECT_EQ(model->classifier->weight.sizes(), (std::vector<int64_t>{3, 16}));
}

TEST(BertModel, RandomInitIsHfs) {
  BertConfig c = tiny_config();
  c.vocab_size = 2000;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.pad_token_id = 7;
  c.initializer_range = 0.05;
  berth::BertForSequenceClassification model(c, berth::BertInitOptions{true, 42});
  const auto& words = model->bert->embeddings->word_embeddings->weight;
  // 128k draws from normal(0, 0.05): the sample std is within a few per mille of 0.05.
  EXPECT_NEAR(words.std().item<double>(), 0.05, 0.05 * 0.02);
  EXPECT_NEAR(words.mean().item<double>(), 0.0, 0.002);
  EXPECT_TRUE(words[7].eq(0).all().item<bool>()) << "the padding row is zero";
  EXPECT_NEAR(model->bert->encoder->layer[1]
                  ->as<berth::BertLayerImpl>()
                  ->intermediate->dense->weight.std()
                  .item<double>(),
              0.05, 0.05 * 0.05);
  for (const auto& t : berth::module_tensors(*model)) {
    const bool layer_norm = t.name.find("LayerNorm") != std::string::npos;
    const bool bias = t.name.size() > 5 && t.name.compare(t.name.size() - 5, 5, ".bias") == 0;
    if (layer_norm && !bias) {
      EXPECT_TRUE(t.tensor.eq(1).all().item<bool>()) << t.name;
    } else if (bias) {
      EXPECT_TRUE(t.tensor.eq(0).all().item<bool>()) << t.name;
    } else {
      EXPECT_GT(t.tensor.std().item<double>(), 0.03) << t.name;
      EXPECT_LT(t.tensor.std().item<double>(), 0.07) << t.name;
    }
  }
}

TEST(BertModel, SeedMakesInitReproducible) {
  berth::BertForSequenceClassification a(tiny_config(), berth::BertInitOptions{true, 7});
  berth::BertForSequenceClassification b(tiny_config(), berth::BertInitOptions{true, 7});
  berth::BertForSequenceClassification c(tiny_config(), berth::BertInitOptions{true, 8});
  const auto ta = berth::module_tensors(*a);
  const auto tb = berth::module_tensors(*b);
  const auto tc = berth::module_tensors(*c);
  for (std::size_t i = 0; i < ta.size(); ++i) EXPECT_TRUE(ta[i].tensor.equal(tb[i].tensor)) << ta[i].name;
  EXPECT_FALSE(ta[0].tensor.equal(tc[0].tensor));
  // Without a seed the global generator decides, so torch::manual_seed governs it as in HF.
  torch::manual_seed(3);
  berth::BertModel d(tiny_config());
  torch::manual_seed(3);
  berth::BertModel e(tiny_config());
  EXPECT_TRUE(d->embeddings->word_embeddings->weight.equal(e->embeddings->word_embeddings->weight));
}

TEST(BertModel, PlacementSeesEveryParameter) {
  berth::BertForSequenceClassification model(tiny_config(), berth::BertInitOptions{true, 1});
  const berth::ModuleInspection inspection = berth::inspect(*model);
  EXPECT_EQ(inspection.tensors.size(), model->parameters().size());
  int64_t bytes = 0;
  for (const auto& p : model->parameters()) bytes += p.numel() * 4;
  EXPECT_EQ(inspection.total_bytes, bytes);
  EXPECT_EQ(inspection.tensors.front().name, "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(inspection.tensors.back().name, "classifier.bias");
  // Strict placement on cpu passes; moving to meta moves every parameter, and then an input left on cpu is
  // refused with the fix.
  berth::place(*model, c10::Device(c10::kCPU), berth::PlacementPolicy::Strict);
  const auto report = berth::place(*model, c10::Device(c10::kMeta));
  EXPECT_EQ(report.moved_tensors, static_cast<int64_t>(model->parameters().size()));
  EXPECT_EQ(*berth::module_device(*model), c10::Device(c10::kMeta));
  const std::string message = error_text<berth::PlacementError>([&] {
    model(torch::zeros({1, 3}, torch::kLong));
  });
  expect_contains(message, {"input_ids"});
}

TEST(BertModel, OutputShapesAndOptionalInputs) {
  berth::BertForSequenceClassification model(tiny_config(), berth::BertInitOptions{true, 5});
  model->eval();
  const at::Tensor ids = torch::randint(0, 40, {2, 5}, torch::kLong);
  auto base = model->bert(ids);
  EXPECT_EQ(base.last_hidden_state.sizes(), (std::vector<int64_t>{2, 5, 16}));
  EXPECT_EQ(base.pooler_output.sizes(), (std::vector<int64_t>{2, 16}));
  // Absent mask = all ones, absent token types = all zeros.
  const auto implicit = model(ids).logits;
  const auto explicit_ =
      model(ids, torch::ones({2, 5}, torch::kLong), torch::zeros({2, 5}, torch::kLong)).logits;
  EXPECT_TRUE(implicit.equal(explicit_));
  EXPECT_EQ(implicit.sizes(), (std::vector<int64_t>{2, 3}));
}

TEST(BertModel, PaddingIsInvisibleToTheRealTokens) {
  berth::BertForSequenceClassification model(tiny_config(), berth::BertInitOptions{true, 9});
  model->eval();
  const at::Tensor ids = torch::tensor({{3, 8, 9, 0, 0}}, torch::kLong);
  const at::Tensor mask = torch::tensor({{1, 1, 1, 0, 0}}, torch::kLong);
  const at::Tensor short_ids = torch::tensor({{3, 8, 9}}, torch::kLong);
  EXPECT_TRUE(torch::allclose(model(ids, mask).logits, model(short_ids).logits, 1e-5, 1e-6));
  // A bool or float mask means the same.
  EXPECT_TRUE(torch::allclose(model(ids, mask.to(torch::kBool)).logits, model(ids, mask).logits));
}

TEST(BertModel, ExtendedMaskIsHfs) {
  const at::Tensor mask = torch::tensor({{1, 0}}, torch::kLong);
  const at::Tensor extended = berth::extended_attention_mask(mask, at::kFloat);
  EXPECT_EQ(extended.sizes(), (std::vector<int64_t>{1, 1, 1, 2}));
  EXPECT_EQ(extended[0][0][0][0].item<float>(), 0.0f);
  EXPECT_EQ(extended[0][0][0][1].item<float>(), std::numeric_limits<float>::lowest());
  EXPECT_EQ(berth::extended_attention_mask(mask, at::kDouble)[0][0][0][1].item<double>(),
            std::numeric_limits<double>::lowest());
}

TEST(BertModel, DropoutOnlyInTraining) {
  BertConfig c = tiny_config();
  c.hidden_dropout_prob = 0.5;
  berth::BertForSequenceClassification model(c, berth::BertInitOptions{true, 2});
  const at::Tensor ids = torch::randint(0, 40, {2, 6}, torch::kLong);
  model->train();
  EXPECT_FALSE(model(ids).logits.equal(model(ids).logits));
  model->eval();
  EXPECT_TRUE(model(ids).logits.equal(model(ids).logits));
}

TEST(BertModel, BadInputsAreExplained) {
  berth::BertModel model(tiny_config(), berth::BertInitOptions{true, 1});
  expect_contains(error_text([&] {
                    model(torch::zeros({1, 13}, torch::kLong));
                  }),
                  {"input_ids has length 13 but the model has max_position_embeddings = 12",
                   "Fix: truncate the inputs to at most 12 tokens"});
  expect_contains(error_text([&] { model(torch::zeros({5}, torch::kLong)); }),
                  {"input_ids must be (batch, length), found shape [5]"});
  expect_contains(error_text([&] {
                    model(torch::zeros({1, 4}));
                  }),
                  {"input_ids must hold integer token ids (int64), found float32"});
  expect_contains(error_text([&] {
                    model(torch::full({1, 4}, 40, torch::kLong));
                  }),
                  {"input_ids holds ids in [40, 40] but the vocabulary has 40 entries"});
  expect_contains(error_text([&] {
                    model(torch::zeros({2, 4}, torch::kLong), torch::ones({2, 3}, torch::kLong));
                  }),
                  {"attention_mask has shape [2, 3] but input_ids has [2, 4]"});
  expect_contains(
      error_text([&] {
        model->forward(torch::zeros({1, 4}, torch::kLong), {}, torch::full({1, 4}, 2, torch::kLong));
      }),
      {"token_type_ids holds [2, 2] but type_vocab_size is 2"});
}

TEST(BertModel, LossFollowsProblemType) {
  BertConfig c = tiny_config();
  const at::Tensor ids = torch::randint(0, 40, {2, 4}, torch::kLong);
  {
    berth::BertForSequenceClassification model(c, berth::BertInitOptions{true, 1});
    model->eval();
    auto out = model->forward(ids, {}, {}, torch::tensor({0, 2}, torch::kLong));
    EXPECT_TRUE(
        torch::allclose(out.loss, torch::nn::functional::cross_entropy(out.logits, torch::tensor({0, 2}))));
    EXPECT_EQ(*model->config.problem_type, "single_label_classification");
    expect_contains(error_text([&] {
                      model->forward(ids, {}, {}, torch::zeros({2, 3}));
                    }),
                    {"single_label_classification needs integer class ids as labels, found float32"});
    expect_contains(error_text([&] {
                      model->forward(ids, {}, {}, torch::tensor({0, 1, 2}, torch::kLong));
                    }),
                    {"must hold one class id per example (2), found shape [3]"});
  }
  {
    berth::BertForSequenceClassification model(c, berth::BertInitOptions{true, 1});
    auto out = model->forward(ids, {}, {}, torch::tensor({{0.0, 1.0, 1.0}, {1.0, 0.0, 0.0}}));
    EXPECT_EQ(*model->config.problem_type, "multi_label_classification");
    expect_contains(error_text([&] {
                      model->forward(ids, {}, {}, torch::zeros({2, 2}));
                    }),
                    {"multi_label_classification labels must match the logits' shape [2, 3]"});
  }
  {
    c.set_num_labels(1);
    berth::BertForSequenceClassification model(c, berth::BertInitOptions{true, 1});
    // Integer labels with one output are still regression, as in HF.
    auto out = model->forward(ids, {}, {}, torch::tensor({1, 0}, torch::kLong));
    EXPECT_EQ(*model->config.problem_type, "regression");
    EXPECT_TRUE(
        torch::allclose(out.loss, (out.logits.squeeze() - torch::tensor({1.0f, 0.0f})).pow(2).mean()));
  }
}

TEST(BertModel, InvalidConfigIsRefusedAtConstruction) {
  BertConfig c = tiny_config();
  c.hidden_act = "swish";
  expect_contains(error_text([&] { berth::BertModel model(c); }),
                  {"hidden_act \"swish\" is not a supported"});
}

TEST(BertModel, ConvertsToOtherDtypes) {
  berth::BertForSequenceClassification model(tiny_config(), berth::BertInitOptions{true, 4});
  model->eval();
  const at::Tensor ids = torch::randint(0, 40, {2, 5}, torch::kLong);
  const at::Tensor mask = torch::tensor({{1, 1, 1, 1, 1}, {1, 1, 1, 0, 0}}, torch::kLong);
  const at::Tensor single = model(ids, mask).logits;
  model->to(torch::kDouble);
  const at::Tensor doubled = model(ids, mask).logits;
  EXPECT_EQ(doubled.scalar_type(), torch::kDouble);
  EXPECT_TRUE(torch::allclose(doubled.to(torch::kFloat), single, 1e-4, 1e-5));
}

}  // namespace
