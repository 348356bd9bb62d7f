// Tests for from_pretrained / save_pretrained: the golden HF dir, HF's prefix and legacy-name rules, missing
// / unexpected / mismatched reports and their texts, and bit-exact round trips.
#include "berth/model/pretrained.h"

#include "berth/io/safetensors.h"
#include "berth/placement/inspect.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using berth::BertForSequenceClassification;
using berth::BertModel;
using berth::from_pretrained;
using berth::testing::error_text;
using berth::testing::expect_contains;

std::string tiny_dir() { return berth::testing::golden_dir() + "/tiny_bert_classifier"; }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A model dir made of the tiny classifier's config.json and the given tensors.
void write_dir(const berth::testing::TempDir& dir, const std::map<std::string, at::Tensor>& tensors) {
  fs::copy_file(tiny_dir() + "/config.json", dir.file("config.json"));
  berth::io::save_safetensors(dir.file("model.safetensors"), tensors, {{"format", "pt"}});
}

std::map<std::string, at::Tensor> tiny_tensors() {
  return berth::io::load_safetensors(tiny_dir() + "/model.safetensors");
}

void expect_same_tensors(const torch::nn::Module& a, const torch::nn::Module& b) {
  const auto ta = berth::module_tensors(a);
  const auto tb = berth::module_tensors(b);
  ASSERT_EQ(ta.size(), tb.size());
  for (std::size_t i = 0; i < ta.size(); ++i) {
    EXPECT_EQ(ta[i].name, tb[i].name);
    EXPECT_EQ(ta[i].tensor.scalar_type(), tb[i].tensor.scalar_type()) << ta[i].name;
    EXPECT_TRUE(ta[i].tensor.equal(tb[i].tensor)) << ta[i].name;
  }
}

TEST(Pretrained, GoldenDirGivesTheGoldenLogits) {
  auto loaded = from_pretrained<BertForSequenceClassification>(tiny_dir());
  EXPECT_TRUE(loaded.report.clean());
  EXPECT_TRUE(loaded.report.warnings.empty());
  BertForSequenceClassification model = loaded.model;
  EXPECT_EQ(model->config.id2label.at(0), "ham");
  EXPECT_EQ(model->config.id2label.at(1), "spam");
  model->eval();
  std::ifstream expected(berth::testing::golden_dir() + "/tiny_bert_classifier_predict/expected.jsonl");
  int lines = 0;
  for (std::string line; std::getline(expected, line) && lines < 100; ++lines) {
    const auto json = nlohmann::json::parse(line);
    const auto ids = torch::tensor(json["input_ids"].get<std::vector<int64_t>>()).unsqueeze(0);
    const auto types = torch::tensor(json["token_type_ids"].get<std::vector<int64_t>>()).unsqueeze(0);
    const auto logits = model->forward(ids, {}, types).logits[0];
    const auto want = torch::tensor(json["logits"].get<std::vector<float>>());
    EXPECT_TRUE(torch::allclose(logits, want, 1e-5, 1e-5)) << line << "\n" << logits;
    EXPECT_EQ(model->config.id2label.at(logits.argmax().item<int64_t>()), json["label"].get<std::string>());
  }
  EXPECT_EQ(lines, 5);
}

TEST(Pretrained, BaseCheckpointIntoClassifierInitialisesTheHead) {
  berth::testing::TempDir dir;
  auto classifier = from_pretrained<BertForSequenceClassification>(tiny_dir()).model;
  berth::save_pretrained(classifier->bert, dir.path().string());
  // No "bert." prefix in a BertModel checkpoint.
  EXPECT_TRUE(
      berth::io::SafetensorsFile::open(dir.file("model.safetensors")).contains("pooler.dense.weight"));

  berth::PretrainedOptions options;
  options.seed = 11;
  auto loaded = from_pretrained<BertForSequenceClassification>(dir.path().string(), options);
  EXPECT_EQ(loaded.report.missing, (std::vector<std::string>{"classifier.weight", "classifier.bias"}));
  EXPECT_TRUE(loaded.report.unexpected.empty());
  ASSERT_EQ(loaded.report.warnings.size(), 1u);
  EXPECT_EQ(
      loaded.report.warnings[0],
      "Some weights of BertForSequenceClassification were not initialized from the model checkpoint at " +
          dir.path().string() +
          " and are newly initialized: ['classifier.weight', 'classifier.bias']\nYou should probably TRAIN "
          "this model on a down-stream task to be able to use it for predictions and inference.");
  expect_same_tensors(*loaded.model->bert, *classifier->bert);
  // The new head follows HF's init: zero bias, weights ~ normal(0, 0.02).
  EXPECT_TRUE(loaded.model->classifier->bias.eq(0).all().item<bool>());
  EXPECT_LT(loaded.model->classifier->weight.abs().max().item<double>(), 0.02 * 6);
}

TEST(Pretrained, ClassifierCheckpointIntoBaseModelIgnoresTheHead) {
  auto loaded = from_pretrained<BertModel>(tiny_dir());
  EXPECT_EQ(loaded.report.unexpected, (std::vector<std::string>{"classifier.bias", "classifier.weight"}));
  EXPECT_TRUE(loaded.report.missing.empty());
  ASSERT_EQ(loaded.report.warnings.size(), 1u);
  expect_contains(
      loaded.report.warnings[0],
      {"Some weights of the model checkpoint at " + tiny_dir() +
           " were not used when initializing BertModel: ['classifier.bias', 'classifier.weight']",
       "- This IS expected if you are initializing BertModel from the checkpoint of a model trained on "
       "another task"});
  auto classifier = from_pretrained<BertForSequenceClassification>(tiny_dir()).model;
  expect_same_tensors(*loaded.model, *classifier->bert);
}

TEST(Pretrained, PretrainingCheckpointHeadsAreUnexpectedAndOldBuffersDropped) {
  berth::testing::TempDir dir;
  auto tensors = tiny_tensors();
  tensors.erase("classifier.weight");
  tensors.erase("classifier.bias");
  tensors["cls.predictions.bias"] = torch::zeros({181});
  tensors["cls.predictions.transform.dense.weight"] = torch::zeros({32, 32});
  tensors["cls.seq_relationship.weight"] = torch::zeros({2, 32});
  // Older transformers saved these buffers; today's (and berth) drop them without a word.
  tensors["bert.embeddings.position_ids"] = torch::arange(64).unsqueeze(0);
  write_dir(dir, tensors);
  auto loaded = from_pretrained<BertForSequenceClassification>(dir.path().string());
  EXPECT_EQ(loaded.report.unexpected,
            (std::vector<std::string>{"cls.predictions.bias", "cls.predictions.transform.dense.weight",
                                      "cls.seq_relationship.weight"}));
  EXPECT_EQ(loaded.report.missing, (std::vector<std::string>{"classifier.weight", "classifier.bias"}));
  EXPECT_EQ(loaded.report.warnings.size(), 2u);
}

TEST(Pretrained, LegacyGammaBetaNamesLoad) {
  berth::testing::TempDir dir;
  std::map<std::string, at::Tensor> legacy;
  for (const auto& [name, tensor] : tiny_tensors()) {
    std::string renamed = name;
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"LayerNorm.weight", "LayerNorm.gamma"},
                                   {"LayerNorm.bias", "LayerNorm.beta"}}) {
      const auto at = renamed.find(from);
      if (at != std::string::npos) renamed.replace(at, from.size(), to);
    }
    legacy[renamed] = tensor;
  }
  write_dir(dir, legacy);
  auto loaded = from_pretrained<BertForSequenceClassification>(dir.path().string());
  EXPECT_TRUE(loaded.report.clean());
  EXPECT_EQ(loaded.report.renamed.size(), 2u + 2u * 2u * 2u);  // embeddings + 2 per layer, weight and bias
  EXPECT_TRUE(berth::testing::contains(
      loaded.report.renamed, "bert.embeddings.LayerNorm.gamma -> bert.embeddings.LayerNorm.weight"));
  expect_same_tensors(*loaded.model, *from_pretrained<BertForSequenceClassification>(tiny_dir()).model);
}

TEST(Pretrained, ShapeMismatchIsAnErrorNamingTheTensorAndTheFix) {
  berth::PretrainedOptions options;
  options.num_labels = 3;
  const std::string message =
      error_text([&] { from_pretrained<BertForSequenceClassification>(tiny_dir(), options); });
  expect_contains(message,
                  {tiny_dir() + ": 2 tensors in model.safetensors do not fit BertForSequenceClassification",
                   "classifier.weight: checkpoint has [2, 32], the model expects [3, 32]",
                   "classifier.bias: checkpoint has [2], the model expects [3]", "num_labels = 3",
                   "ignore_mismatched_sizes"});
}

TEST(Pretrained, IgnoreMismatchedSizesReinitialisesAndWarns) {
  berth::PretrainedOptions options;
  options.labels = std::vector<std::string>{"a", "b", "c"};
  options.ignore_mismatched_sizes = true;
  options.seed = 5;
  auto loaded = from_pretrained<BertForSequenceClassification>(tiny_dir(), options);
  ASSERT_EQ(loaded.report.mismatched.size(), 2u);
  EXPECT_EQ(loaded.report.mismatched[0].name, "classifier.weight");
  EXPECT_EQ(loaded.model->classifier->weight.sizes(), (std::vector<int64_t>{3, 32}));
  EXPECT_EQ(loaded.model->config.id2label.at(2), "c");
  ASSERT_EQ(loaded.report.warnings.size(), 1u);
  expect_contains(
      loaded.report.warnings[0],
      {"newly initialized because the shapes did not match:\n- classifier.weight: found shape "
       "torch.Size([2, 32]) in the checkpoint and torch.Size([3, 32]) in the model instantiated\n"});
  // The encoder still comes from the checkpoint.
  expect_same_tensors(*loaded.model->bert, *from_pretrained<BertModel>(tiny_dir()).model);
}

TEST(Pretrained, WrongConfigForTheWeightsIsAnError) {
  berth::testing::TempDir dir;
  auto tensors = tiny_tensors();
  write_dir(dir, tensors);
  std::string config = read_text(dir.file("config.json"));
  config.replace(config.find("\"intermediate_size\": 48"), 23, "\"intermediate_size\": 40");
  std::ofstream(dir.file("config.json"), std::ios::trunc) << config;
  expect_contains(
      error_text([&] { from_pretrained<BertModel>(dir.path().string()); }),
      {"bert.encoder.layer.0.intermediate.dense.weight: checkpoint has [48, 32], the model expects "
       "[40, 32]",
       "use the config.json saved with them"});
}

// HF's ignore_mismatched_sizes would re-initialise the whole encoder here; berth re-initialises a head only.
TEST(Pretrained, IgnoreMismatchedSizesStillRefusesAConfigThatDoesNotFitTheBody) {
  berth::testing::TempDir dir;
  write_dir(dir, tiny_tensors());
  std::string config = read_text(dir.file("config.json"));
  config.replace(config.find("\"intermediate_size\": 48"), 23, "\"intermediate_size\": 40");
  std::ofstream(dir.file("config.json"), std::ios::trunc) << config;
  berth::PretrainedOptions options;
  options.labels = std::vector<std::string>{"a", "b", "c"};  // the head differs too: not enough to pass
  options.ignore_mismatched_sizes = true;
  expect_contains(
      error_text([&] { from_pretrained<BertForSequenceClassification>(dir.path().string(), options); }),
      {"tensors in model.safetensors do not fit BertForSequenceClassification",
       "bert.encoder.layer.0.intermediate.dense.weight: checkpoint has [48, 32], the model expects [40, 32]",
       "more", "Fix: config.json does not describe these weights"});
}

TEST(Pretrained, PytorchBinOnlyExplainsTheConversion) {
  berth::testing::TempDir dir;
  fs::copy_file(tiny_dir() + "/config.json", dir.file("config.json"));
  std::ofstream(dir.file("pytorch_model.bin")) << "pickle";
  expect_contains(error_text([&] { from_pretrained<BertModel>(dir.path().string()); }),
                  {"has pytorch_model.bin but no model.safetensors", "Fix: convert it once with Python",
                   "save_file(", "metadata={'format': 'pt'}"});
}

TEST(Pretrained, MissingFilesAreNamed) {
  berth::testing::TempDir dir;
  expect_contains(error_text([&] { from_pretrained<BertModel>(dir.file("nope")); }),
                  {"nope: not a directory"});
  expect_contains(error_text([&] { from_pretrained<BertModel>(dir.path().string()); }), {"no config.json"});
  fs::copy_file(tiny_dir() + "/config.json", dir.file("config.json"));
  expect_contains(error_text([&] { from_pretrained<BertModel>(dir.path().string()); }),
                  {"no model.safetensors (nor model.safetensors.index.json) found"});
}

TEST(Pretrained, ShardedCheckpointsLoad) {
  berth::testing::TempDir dir;
  fs::copy_file(tiny_dir() + "/config.json", dir.file("config.json"));
  std::map<std::string, at::Tensor> first, second;
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  for (const auto& [name, tensor] : tiny_tensors()) {
    const bool in_first = name.find("encoder") == std::string::npos;
    (in_first ? first : second)[name] = tensor;
    index["weight_map"][name] =
        in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  berth::io::save_safetensors(dir.file("model-00001-of-00002.safetensors"), first, {{"format", "pt"}});
  berth::io::save_safetensors(dir.file("model-00002-of-00002.safetensors"), second, {{"format", "pt"}});
  std::ofstream(dir.file("model.safetensors.index.json")) << index.dump(2);
  auto loaded = from_pretrained<BertForSequenceClassification>(dir.path().string());
  EXPECT_TRUE(loaded.report.clean());
  expect_same_tensors(*loaded.model, *from_pretrained<BertForSequenceClassification>(tiny_dir()).model);
}

TEST(Pretrained, SaveThenLoadIsBitExact) {
  berth::testing::TempDir dir;
  berth::BertConfig config = from_pretrained<BertModel>(tiny_dir()).model->config;
  config.set_labels({"neg", "neutral", "pos"});
  config.extra_fields["my_field"] = "[1, 2]";
  BertForSequenceClassification model(config, berth::BertInitOptions{true, 99});
  const std::string out = dir.file("saved/model");  // parent directories are created
  berth::save_pretrained(model, out);

  auto loaded = from_pretrained<BertForSequenceClassification>(out);
  EXPECT_TRUE(loaded.report.clean());
  expect_same_tensors(*loaded.model, *model);
  EXPECT_EQ(loaded.model->config.to_json_text(), read_text(out + "/config.json"));
  const std::string config_text = read_text(out + "/config.json");
  expect_contains(config_text, {"\"architectures\": [\n    \"BertForSequenceClassification\"\n  ]",
                                "\"dtype\": \"float32\"", "\"my_field\": [", "\"2\": \"pos\""});
  const auto file = berth::io::SafetensorsFile::open(out + "/model.safetensors");
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.names().size(), model->parameters().size());
  // Only the two files: no temporary left behind.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(out)) files += entry.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 2);

  // Saving again over the same directory replaces the files.
  berth::save_pretrained(loaded.model, out);
  expect_same_tensors(*from_pretrained<BertForSequenceClassification>(out).model, *model);
}

TEST(Pretrained, SaveRefusesTensorsSharingStorage) {
  BertForSequenceClassification model(from_pretrained<BertModel>(tiny_dir()).model->config,
                                      berth::BertInitOptions{true, 3});
  // Two (C, C) weights over one storage, as tied weights would be.
  auto layer = model->bert->encoder->layer[0]->as<berth::BertLayerImpl>();
  model->bert->pooler->dense->weight.set_data(layer->attention->self->query->weight.data());
  berth::testing::TempDir dir;
  expect_contains(
      error_text([&] { berth::save_pretrained(model, dir.path().string()); }),
      {"bert.pooler.dense.weight and bert.encoder.layer.0.attention.self.query.weight share memory"});
  EXPECT_FALSE(fs::exists(dir.file("model.safetensors")));
}

TEST(Pretrained, DtypesConvertAndRoundTrip) {
  berth::PretrainedOptions options;
  options.dtype = at::kDouble;
  auto doubled = from_pretrained<BertForSequenceClassification>(tiny_dir(), options).model;
  auto single = from_pretrained<BertForSequenceClassification>(tiny_dir()).model;
  EXPECT_EQ(doubled->classifier->weight.scalar_type(), at::kDouble);
  EXPECT_TRUE(doubled->classifier->weight.equal(single->classifier->weight.to(at::kDouble)));

  berth::testing::TempDir dir;
  berth::save_pretrained(doubled, dir.path().string());
  EXPECT_EQ(berth::io::SafetensorsFile::open(dir.file("model.safetensors")).dtype("classifier.weight"),
            at::kDouble);
  expect_contains(read_text(dir.file("config.json")), {"\"dtype\": \"float64\""});
  auto again = from_pretrained<BertForSequenceClassification>(dir.path().string(), options).model;
  expect_same_tensors(*again, *doubled);

  options.dtype = at::kLong;
  expect_contains(error_text([&] { from_pretrained<BertModel>(tiny_dir(), options); }),
                  {"dtype int64 is not a floating-point type"});
}

}  // namespace
