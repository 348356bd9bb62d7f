// Parity of the encoder families (RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA, ModernBERT, DeBERTa-v2; BERT's
// token heads)
// with HF transformers (tests/goldens/encoder_goldens.py): each family and task head loaded through
// load_task_model gives HF's logits, loss and every parameter's gradient, and save_pretrained writes HF's
// names back.
#include "berth/io/safetensors.h"
#include "berth/model/auto_model.h"
#include "berth/model/roberta_model.h"

#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

namespace {

using berth::ModelTask;

struct EncoderCase {
  std::string name;  // the directory under <golden_dir>/encoders
  ModelTask task;
};

// The cases encoder_goldens.py writes, in its order; a case the script stops writing fails below.
std::vector<EncoderCase> encoder_cases() {
  const std::vector<std::pair<std::string, ModelTask>> tasks = {
      {"sequence_classification", ModelTask::SequenceClassification},
      {"token_classification", ModelTask::TokenClassification},
      {"masked_lm", ModelTask::MaskedLM},
      {"question_answering", ModelTask::QuestionAnswering}};
  std::vector<EncoderCase> cases;
  for (const std::string family : {"roberta", "xlm_roberta", "distilbert", "electra", "modernbert"})
    for (const auto& [suffix, task] : tasks) cases.push_back({family + "_" + suffix, task});
  // Mean pooling with every optional bias on.
  cases.push_back({"modernbert_mean_sequence_classification", ModelTask::SequenceClassification});
  // BERT's token heads (its sequence-classification and masked-LM heads: bert_parity_test.cpp).
  cases.push_back({"bert_token_classification", ModelTask::TokenClassification});
  cases.push_back({"bert_question_answering", ModelTask::QuestionAnswering});
  // DeBERTa-v3's shape with every head; DeBERTa-v2's (own position projections, convolution, embedding
  // projection) for classification and the legacy masked-LM head; the newer lm_predictions head.
  for (const auto& [suffix, task] : tasks) cases.push_back({"deberta_v2_" + suffix, task});
  cases.push_back({"deberta_v2_unshared_sequence_classification", ModelTask::SequenceClassification});
  cases.push_back({"deberta_v2_unshared_masked_lm", ModelTask::MaskedLM});
  cases.push_back({"deberta_v2_lm_masked_lm", ModelTask::MaskedLM});
  return cases;
}

std::string encoder_case_dir(const std::string& name) {
  return berth::testing::golden_dir() + "/encoders/" + name;
}

// fp32 parity: |actual - expected| <= 1e-5 + 1e-5 * |expected| everywhere (numpy's allclose).
void expect_encoder_close(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what << " is undefined";
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const at::Tensor a = actual.detach().to(at::kDouble);
  const at::Tensor e = expected.to(at::kDouble);
  const double worst = ((a - e).abs() - 1e-5 * e.abs()).max().item<double>();
  EXPECT_LE(worst, 1e-5) << what << ": max |diff| " << (a - e).abs().max().item<double>();
}

// The golden's inputs and labels as the data collator hands them to forward_batch.
berth::Batch encoder_golden_batch(const berth::io::SafetensorsFile& golden) {
  berth::Batch batch;
  for (const char* name :
       {"input_ids", "attention_mask", "token_type_ids", "labels", "start_positions", "end_positions"})
    if (golden.contains(name)) batch[name] = golden.tensor(name);
  return batch;
}

void expect_encoder_gradients(berth::TaskModel& model, const berth::io::SafetensorsFile& golden);

std::set<std::string> encoder_saved_names(const std::string& dir) {
  const auto names = berth::io::SafetensorsFile::open(dir + "/model.safetensors").names();
  return {names.begin(), names.end()};
}

TEST(EncoderParity, ScriptWritesTheListedCases) {
  std::ifstream in(encoder_case_dir("cases.txt"));
  std::vector<std::string> written;
  for (std::string line; std::getline(in, line) && written.size() < 100;) written.push_back(line);
  std::vector<std::string> expected;
  for (const EncoderCase& c : encoder_cases()) expected.push_back(c.name);
  EXPECT_EQ(written, expected);
}

class EncoderGoldenCase : public ::testing::TestWithParam<EncoderCase> {};

TEST_P(EncoderGoldenCase, LogitsLossAndGradientsMatchHf) {
  const std::string dir = encoder_case_dir(GetParam().name);
  auto loaded = berth::load_task_model(dir, {}, GetParam().task);
  EXPECT_TRUE(loaded.report.clean()) << (loaded.report.warnings.empty() ? "" : loaded.report.warnings[0]);
  berth::TaskModel& model = *loaded.model;
  model.module().eval();  // dropout off, as the reference ran
  const auto golden = berth::io::SafetensorsFile::open(dir + "/golden.safetensors");
  EXPECT_EQ(model.info().architecture, golden.metadata().at("architecture"));
  EXPECT_EQ(model.info().task, GetParam().task);

  berth::TaskOutput out = model.forward_batch(encoder_golden_batch(golden));
  expect_encoder_close(out.logits, golden.tensor("logits"), "logits");
  expect_encoder_close(out.loss, golden.tensor("loss"), "loss");
  out.loss.backward();
  expect_encoder_gradients(model, golden);
}

// A loss-only forward (the Trainer's) decodes a masked LM's labeled tokens only: HF's logits at those rows,
// HF's loss and gradients.
class EncoderMaskedLmCase : public ::testing::TestWithParam<EncoderCase> {};

std::vector<EncoderCase> masked_lm_cases() {
  std::vector<EncoderCase> out;
  for (const EncoderCase& c : encoder_cases())
    if (c.task == ModelTask::MaskedLM) out.push_back(c);
  return out;
}

TEST_P(EncoderMaskedLmCase, LossOnlyForwardDecodesTheLabeledTokensWithHfsLossAndGradients) {
  const std::string dir = encoder_case_dir(GetParam().name);
  auto loaded = berth::load_task_model(dir, {}, GetParam().task);
  berth::TaskModel& model = *loaded.model;
  model.module().eval();
  const auto golden = berth::io::SafetensorsFile::open(dir + "/golden.safetensors");
  const at::Tensor labels = golden.tensor("labels").reshape({-1});
  const at::Tensor rows = (labels != -100).nonzero().reshape({-1});
  ASSERT_GT(rows.numel(), 0);
  ASSERT_LT(rows.numel(), labels.numel()) << "the golden labels every token: nothing to leave out";
  berth::TaskOutput out;
  {
    const berth::LossOnlyForward loss_only(model);
    out = model.forward_batch(encoder_golden_batch(golden));
  }
  EXPECT_FALSE(model.loss_only());
  const at::Tensor dense = golden.tensor("logits");
  expect_encoder_close(out.logits, dense.reshape({-1, dense.size(-1)}).index_select(0, rows), "logits");
  expect_encoder_close(out.loss, golden.tensor("loss"), "loss");
  out.loss.backward();
  expect_encoder_gradients(model, golden);
}

// Every parameter's gradient against HF's, and every HF parameter one of berth's (a tied one once).
void expect_encoder_gradients(berth::TaskModel& model, const berth::io::SafetensorsFile& golden) {
  std::set<std::string> checked;
  for (const auto& param : model.module().named_parameters()) {
    ASSERT_TRUE(golden.contains("grad." + param.key())) << param.key() << " is not one of HF's parameters";
    expect_encoder_close(param.value().grad(), golden.tensor("grad." + param.key()),
                         "grad of " + param.key());
    checked.insert("grad." + param.key());
  }
  // Every HF parameter is one of berth's (a tied one once).
  for (const std::string& name : golden.names()) {
    if (name.rfind("grad.", 0) == 0) {
      EXPECT_TRUE(checked.count(name)) << name << " has no berth parameter";
    }
  }
}

TEST_P(EncoderGoldenCase, SavePretrainedWritesHfNamesAndReloads) {
  const std::string dir = encoder_case_dir(GetParam().name);
  auto loaded = berth::load_task_model(dir, {}, GetParam().task);
  loaded.model->module().eval();
  const auto golden = berth::io::SafetensorsFile::open(dir + "/golden.safetensors");
  const berth::Batch batch = encoder_golden_batch(golden);
  torch::NoGradGuard no_grad;
  const at::Tensor before = loaded.model->forward_batch(batch).logits;

  berth::testing::TempDir saved;
  loaded.model->save_pretrained(saved.path().string());
  EXPECT_EQ(encoder_saved_names(saved.path().string()), encoder_saved_names(dir));
  const berth::PretrainedConfig config = berth::PretrainedConfig::load(saved.file("config.json"));
  ASSERT_TRUE(config.architectures.has_value());
  EXPECT_EQ(*config.architectures, std::vector<std::string>{golden.metadata().at("architecture")});

  // The default task now comes from the architecture written.
  auto reloaded = berth::load_task_model(saved.path().string());
  EXPECT_TRUE(reloaded.report.clean());
  EXPECT_EQ(reloaded.model->info().task, GetParam().task);
  reloaded.model->module().eval();
  EXPECT_TRUE(torch::equal(reloaded.model->forward_batch(batch).logits, before));
}

INSTANTIATE_TEST_SUITE_P(Goldens, EncoderGoldenCase, ::testing::ValuesIn(encoder_cases()),
                         [](const ::testing::TestParamInfo<EncoderCase>& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Goldens, EncoderMaskedLmCase, ::testing::ValuesIn(masked_lm_cases()),
                         [](const ::testing::TestParamInfo<EncoderCase>& info) { return info.param.name; });

// A copy of golden case `name` with config.json's `field` set to the JSON `value`.
std::string encoder_case_with(const berth::testing::TempDir& tmp, const std::string& name,
                              const std::string& field, const std::string& value) {
  namespace fs = std::filesystem;
  const fs::path dir = tmp.path() / name;
  fs::create_directories(dir);
  fs::copy_file(encoder_case_dir(name) + "/model.safetensors", dir / "model.safetensors");
  berth::PretrainedConfig config = berth::PretrainedConfig::load(encoder_case_dir(name) + "/config.json");
  config.set_json(field, value);
  config.save((dir / "config.json").string());
  return dir.string();
}

TEST(EncoderFamilies, UnsupportedConfigValuesAreRefusedNamingTheField) {
  const std::vector<std::vector<std::string>> cases = {
      {"roberta_sequence_classification", "position_embedding_type", "\"relative_key\""},
      {"roberta_masked_lm", "tie_word_embeddings", "false"},
      {"xlm_roberta_token_classification", "is_decoder", "true"},
      {"distilbert_sequence_classification", "sinusoidal_pos_embds", "true"},
      {"electra_question_answering", "hidden_act", "\"swish\""},
      {"modernbert_sequence_classification", "classifier_pooling", "\"max\""},
      {"modernbert_masked_lm", "tie_word_embeddings", "false"},
      {"modernbert_token_classification", "layer_types",
       "[\"full_attention\", \"chunked_attention\", \"sliding_attention\", \"full_attention\"]"},
      {"modernbert_question_answering", "rope_parameters",
       "{\"full_attention\": {\"rope_type\": \"yarn\", \"rope_theta\": 10.0, \"factor\": 2.0}}"},
      {"modernbert_sequence_classification", "hidden_activation", "\"silu\""},
      {"modernbert_masked_lm", "head_dim", "16"},
  };
  for (const auto& c : cases) {
    const berth::testing::TempDir case_tmp;  // a case may appear twice, with another field
    const std::string dir = encoder_case_with(case_tmp, c[0], c[1], c[2]);
    const std::string message = berth::testing::error_text([&] { berth::load_task_model(dir); });
    berth::testing::expect_contains(message, {c[1], "Fix:"});
  }
  berth::PretrainedOptions three_labels;
  three_labels.num_labels = 3;
  const std::string message = berth::testing::error_text([&] {
    berth::load_task_model(encoder_case_dir("roberta_question_answering"), three_labels,
                           ModelTask::QuestionAnswering);
  });
  berth::testing::expect_contains(message, {"num_labels", "3 for question answering", "Fix:"});
}

TEST(EncoderFamilies, ATaskTheFamilyLacksNamesItAndWhatExists) {
  const std::string message = berth::testing::error_text(
      [] { berth::load_task_model(encoder_case_dir("roberta_masked_lm"), {}, ModelTask::CausalLM); });
  berth::testing::expect_contains(
      message, {"\"roberta\"", "causal-lm",
                "sequence-classification, token-classification, masked-lm, question-answering"});
}

TEST(EncoderFamilies, RobertaPositionsSkipPaddingAndStartAfterIt) {
  // Padding index 1: real tokens count 2, 3, ...; pads (wherever they are) keep 1.
  const at::Tensor ids = torch::tensor({0, 7, 1, 9, 1}, at::kLong).unsqueeze(0);
  const at::Tensor expected = torch::tensor({2, 3, 1, 4, 1}, at::kLong).unsqueeze(0);
  EXPECT_TRUE(torch::equal(berth::roberta_position_ids(ids, 1), expected));
  const berth::PretrainedConfig config =
      berth::PretrainedConfig::load(encoder_case_dir("roberta_sequence_classification") + "/config.json");
  EXPECT_EQ(berth::max_positions(config), config.get_int("max_position_embeddings") - 2);
}

// Records the blocks the model runs, passing tensors through unchanged.
class EncoderRecordingHooks : public berth::LayerHooks {
 public:
  at::Tensor before_forward(const std::string& block, const at::Tensor& input) override {
    before.push_back(block);
    return input;
  }
  at::Tensor after_forward(const std::string& block, const at::Tensor& output) override {
    after.push_back(block);
    return output;
  }
  std::vector<std::string> before, after;
};

TEST(EncoderFamilies, LayerHooksWrapEveryBlockInOrderWithoutChangingTheResult) {
  for (const EncoderCase& c : encoder_cases()) {
    auto model = berth::load_task_model(encoder_case_dir(c.name), {}, c.task).model;
    model->module().eval();
    const auto golden = berth::io::SafetensorsFile::open(encoder_case_dir(c.name) + "/golden.safetensors");
    torch::NoGradGuard no_grad;
    const at::Tensor plain = model->forward_batch(encoder_golden_batch(golden)).logits;
    auto hooks = std::make_shared<EncoderRecordingHooks>();
    model->set_layer_hooks(hooks);
    EXPECT_TRUE(torch::equal(model->forward_batch(encoder_golden_batch(golden)).logits, plain)) << c.name;
    EXPECT_EQ(hooks->before, model->hook_blocks()) << c.name;
    // A masked-LM head's tied decoder is a second use of the embeddings block, last, nested in the head's
    // last block: it ends first.
    std::vector<std::string> ends = model->hook_blocks();
    if (c.task == ModelTask::MaskedLM) {
      EXPECT_EQ(ends.back(), ends.front()) << c.name;
      std::swap(ends[ends.size() - 1], ends[ends.size() - 2]);
    }
    EXPECT_EQ(hooks->after, ends) << c.name;
    // Every parameter is in a block (ZeRO-3 partitions it there), and every block holds parameters.
    std::set<std::string> holding;
    for (const auto& p : model->module().named_parameters()) {
      const std::string block = berth::block_of(model->hook_blocks(), p.key());
      holding.insert(block);
      EXPECT_FALSE(block.empty()) << c.name << ": " << p.key() << " is in no block";
    }
    for (const std::string& block : model->hook_blocks())
      EXPECT_TRUE(holding.count(block)) << c.name << ": " << block;
  }
}

TEST(EncoderFamilies, FreshModelsGetHfInitWithZeroPaddingRowsAndDecoderBiases) {
  for (const std::string name : {"roberta_masked_lm", "distilbert_masked_lm", "electra_masked_lm"}) {
    const berth::PretrainedConfig config =
        berth::PretrainedConfig::load(encoder_case_dir(name) + "/config.json");
    auto model = berth::build_task_model(config, ModelTask::MaskedLM, {true, 7});
    const auto params = model->module().named_parameters();
    const std::string family = name.substr(0, name.find('_'));
    const int64_t pad = config.get_int("pad_token_id");
    const at::Tensor words = params[family + ".embeddings.word_embeddings.weight"];
    EXPECT_EQ(words[pad].abs().sum().item<double>(), 0.0) << name;
    EXPECT_NEAR(words.std().item<double>(), 0.02, 0.004) << name;
    const std::string bias = family == "roberta"      ? "lm_head.bias"
                             : family == "distilbert" ? "vocab_projector.bias"
                                                      : "generator_lm_head.bias";
    ASSERT_TRUE(params.contains(bias)) << name;
    EXPECT_EQ(params[bias].abs().sum().item<double>(), 0.0) << name;
    EXPECT_TRUE(torch::equal(params[family + ".embeddings.LayerNorm.weight"],
                             torch::ones_like(params[family + ".embeddings.LayerNorm.weight"])));
    // A tied decoder weight is not a tensor of its own.
    for (const auto& p : params) EXPECT_EQ(p.key().find("decoder.weight"), std::string::npos) << p.key();
  }
  // RoBERTa's position table has the padding row too.
  const berth::PretrainedConfig roberta =
      berth::PretrainedConfig::load(encoder_case_dir("roberta_masked_lm") + "/config.json");
  auto model = berth::build_task_model(roberta, ModelTask::SequenceClassification, {true, 7});
  const at::Tensor positions =
      model->module().named_parameters()["roberta.embeddings.position_embeddings.weight"];
  EXPECT_EQ(positions[1].abs().sum().item<double>(), 0.0);
}

TEST(EncoderFamilies, ModernBertReadsTheHubsOlderFieldsAndSparsePrediction) {
  // Hub checkpoints predating transformers 5 name the thetas and the global layers' period, not
  // rope_parameters and layer_types: the same model (thetas 500 and 77, every third layer global).
  const std::string name = "modernbert_mean_sequence_classification";
  const auto golden = berth::io::SafetensorsFile::open(encoder_case_dir(name) + "/golden.safetensors");
  auto logits_with = [&](double local_theta) {
    const berth::testing::TempDir tmp;
    const std::string dir = encoder_case_with(tmp, name, "global_rope_theta", "500.0");
    berth::PretrainedConfig config = berth::PretrainedConfig::load(dir + "/config.json");
    config.set_null("rope_parameters");
    config.set_null("layer_types");
    config.set_number("local_rope_theta", local_theta);
    config.set_int("global_attn_every_n_layers", 3);
    config.save(dir + "/config.json");
    auto model = berth::load_task_model(dir).model;
    model->module().eval();
    torch::NoGradGuard no_grad;
    return model->forward_batch(encoder_golden_batch(golden)).logits;
  };
  expect_encoder_close(logits_with(77.0), golden.tensor("logits"), "logits from the older fields");
  EXPECT_GT((logits_with(10000.0) - golden.tensor("logits")).abs().max().item<double>(), 1e-3);

  // sparse_prediction drops only what the loss ignores: HF's loss.
  const berth::testing::TempDir tmp;
  const std::string mlm = encoder_case_with(tmp, "modernbert_masked_lm", "sparse_prediction", "true");
  auto model = berth::load_task_model(mlm).model;
  model->module().eval();
  const auto mlm_golden =
      berth::io::SafetensorsFile::open(encoder_case_dir("modernbert_masked_lm") + "/golden.safetensors");
  expect_encoder_close(model->forward_batch(encoder_golden_batch(mlm_golden)).loss, mlm_golden.tensor("loss"),
                       "sparse-prediction loss");
}

TEST(EncoderFamilies, ModernBertInBfloat16RunsCloseToTheFloat32Reference) {
  for (const EncoderCase& c : encoder_cases()) {
    if (c.name.rfind("modernbert", 0) != 0) continue;
    berth::PretrainedOptions options;
    options.dtype = at::kBFloat16;
    auto model = berth::load_task_model(encoder_case_dir(c.name), options, c.task).model;
    model->module().eval();
    const auto golden = berth::io::SafetensorsFile::open(encoder_case_dir(c.name) + "/golden.safetensors");
    torch::NoGradGuard no_grad;
    const berth::TaskOutput out = model->forward_batch(encoder_golden_batch(golden));
    EXPECT_EQ(out.logits.scalar_type(), at::kBFloat16) << c.name;
    // bfloat16 keeps 8 bits of mantissa: a few percent of the logits' range over 4 layers.
    const at::Tensor expected = golden.tensor("logits");
    const double range = expected.abs().max().item<double>();
    EXPECT_LT((out.logits.to(at::kFloat) - expected).abs().max().item<double>(), 0.1 * range) << c.name;
    const double loss = golden.tensor("loss").item<double>();
    EXPECT_NEAR(out.loss.to(at::kFloat).item<double>(), loss, 0.05 * loss) << c.name;
  }
}

// The standard deviation of a normal truncated at +-2 standard deviations (ModernBERT's cutoff factor), per
// unit of the untruncated one.
constexpr double kModernBertTruncatedStd = 0.8796;

TEST(EncoderFamilies, FreshModernBertGetsHfTruncatedNormalInit) {
  const berth::PretrainedConfig config =
      berth::PretrainedConfig::load(encoder_case_dir("modernbert_masked_lm") + "/config.json");
  auto model = berth::build_task_model(config, ModelTask::MaskedLM, {true, 7});
  auto params = model->module().named_parameters();
  auto expect_truncated = [&](const std::string& name, double std) {
    ASSERT_TRUE(params.contains(name)) << name;
    const at::Tensor p = params[name];
    EXPECT_NEAR(p.std().item<double>(), std * kModernBertTruncatedStd, 0.1 * std) << name;
    EXPECT_LE(p.abs().max().item<double>(), 2 * std) << name;
  };
  const double range = config.get_number("initializer_range");
  const double out = range / std::sqrt(2.0 * static_cast<double>(config.get_int("num_hidden_layers")));
  expect_truncated("model.embeddings.tok_embeddings.weight", range);
  expect_truncated("model.layers.1.attn.Wqkv.weight", range);
  expect_truncated("model.layers.1.mlp.Wi.weight", range);
  expect_truncated("model.layers.1.attn.Wo.weight", out);
  expect_truncated("model.layers.2.mlp.Wo.weight", out);
  expect_truncated("head.dense.weight", out);
  // HF draws the padding row with the rest (its trunc_normal_ runs after Embedding's own zeroing).
  const at::Tensor words = params["model.embeddings.tok_embeddings.weight"];
  EXPECT_GT(words[config.get_int("pad_token_id")].abs().sum().item<double>(), 0.0);
  EXPECT_EQ(params["decoder.bias"].abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(torch::equal(params["model.final_norm.weight"], torch::ones({config.get_int("hidden_size")})));
  EXPECT_FALSE(params.contains("decoder.weight"));
  EXPECT_FALSE(params.contains("model.layers.0.attn_norm.weight"));  // HF's Identity on layer 0

  auto classifier = berth::build_task_model(config, ModelTask::SequenceClassification, {true, 7});
  params = classifier->module().named_parameters();
  expect_truncated("classifier.weight", 1.0 / std::sqrt(static_cast<double>(config.get_int("hidden_size"))));
  EXPECT_EQ(params["classifier.bias"].abs().sum().item<double>(), 0.0);
  // The same seed draws the same weights.
  auto again = berth::build_task_model(config, ModelTask::SequenceClassification, {true, 7});
  EXPECT_TRUE(
      torch::equal(again->module().named_parameters()["classifier.weight"], params["classifier.weight"]));
}

TEST(EncoderFamilies, TrainingModeRunsDropoutAndBackward) {
  for (const EncoderCase& c : encoder_cases()) {
    auto model = berth::load_task_model(encoder_case_dir(c.name), {}, c.task).model;
    const auto golden = berth::io::SafetensorsFile::open(encoder_case_dir(c.name) + "/golden.safetensors");
    model->module().train();
    torch::manual_seed(5);
    berth::TaskOutput out = model->forward_batch(encoder_golden_batch(golden));
    ASSERT_TRUE(out.loss.defined()) << c.name;
    EXPECT_TRUE(std::isfinite(out.loss.item<double>())) << c.name;
    // Dropout is on: the training loss is not the evaluation loss HF computed.
    EXPECT_NE(out.loss.item<double>(), golden.tensor("loss").item<double>()) << c.name;
    out.loss.backward();
    const auto params = model->module().named_parameters();
    const at::Tensor& words = params[params.begin()->key()];
    EXPECT_TRUE(words.grad().defined()) << c.name;
  }
}

TEST(EncoderFamilies, ElectraWithoutAProjectionWhenEmbeddingAndHiddenSizesAgree) {
  berth::PretrainedConfig config =
      berth::PretrainedConfig::load(encoder_case_dir("electra_token_classification") + "/config.json");
  config.set_int("embedding_size", config.get_int("hidden_size"));
  auto model = berth::build_task_model(config, ModelTask::TokenClassification, {true, 1});
  const auto params = model->module().named_parameters();
  EXPECT_FALSE(params.contains("electra.embeddings_project.weight"));
  EXPECT_TRUE(params.contains("electra.embeddings.word_embeddings.weight"));
  const at::Tensor ids = torch::tensor({2, 5, 7}, at::kLong).unsqueeze(0);
  EXPECT_EQ(model->forward_batch({{"input_ids", ids}}).logits.sizes(),
            (std::vector<int64_t>{1, 3, config.num_labels()}));
}

}  // namespace
