// Tests for BertConfig: HF's defaults and label rules, byte-exact writing, and validation messages.
#include "berth/model/bert_config.h"

#include "support/test_support.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

using berth::BertConfig;
using berth::testing::error_text;
using berth::testing::expect_contains;

std::string bert_config_read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The five fields berth requires; everything else has HF's defaults.
std::string minimal(const std::string& more = "") {
  return R"({"vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
             "intermediate_size": 64)" +
         (more.empty() ? "" : ", " + more) + "}";
}

std::string parse_error(const std::string& text) {
  return error_text([&] { BertConfig::from_json_text(text, "dir/config.json"); });
}

TEST(BertConfig, DefaultsAreHfs) {
  BertConfig c = BertConfig::from_json_text(minimal());
  EXPECT_EQ(c.hidden_act, "gelu");
  EXPECT_DOUBLE_EQ(c.hidden_dropout_prob, 0.1);
  EXPECT_DOUBLE_EQ(c.attention_probs_dropout_prob, 0.1);
  EXPECT_FALSE(c.classifier_dropout.has_value());
  EXPECT_DOUBLE_EQ(c.classifier_dropout_or_default(), 0.1);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_DOUBLE_EQ(c.initializer_range, 0.02);
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-12);
  EXPECT_EQ(c.pad_token_id, 0);
  EXPECT_EQ(c.position_embedding_type, "absolute");
  EXPECT_EQ(c.num_labels(), 2);
  EXPECT_EQ(c.id2label.at(0), "LABEL_0");
  EXPECT_EQ(c.id2label.at(1), "LABEL_1");
  EXPECT_EQ(c.label2id.at("LABEL_1"), 1);
  EXPECT_FALSE(c.problem_type.has_value());
  EXPECT_EQ(c.head_size(), 8);
}

TEST(BertConfig, ReadsBertBaseUncasedsConfig) {
  // config.json of bert-base-uncased on the HF hub, as published.
  const std::string text = R"({
  "architectures": [
    "BertForMaskedLM"
  ],
  "attention_probs_dropout_prob": 0.1,
  "gradient_checkpointing": false,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "transformers_version": "4.6.0.dev0",
  "type_vocab_size": 2,
  "use_cache": true,
  "vocab_size": 30522
}
)";
  BertConfig c = BertConfig::from_json_text(text);
  EXPECT_EQ(c.vocab_size, 30522);
  EXPECT_EQ(c.hidden_size, 768);
  EXPECT_EQ(c.num_hidden_layers, 12);
  EXPECT_EQ(c.head_size(), 64);
  EXPECT_EQ(c.architectures, std::vector<std::string>{"BertForMaskedLM"});
  EXPECT_EQ(c.extra_fields.at("gradient_checkpointing"), "false");
  // Written back as transformers would, less its version stamp and plus BertConfig's classifier_dropout.
  std::string expected = text;
  const std::string version_line = "  \"transformers_version\": \"4.6.0.dev0\",\n";
  expected.erase(expected.find(version_line), version_line.size());
  expected.replace(expected.find("  \"gradient_checkpointing\""), 0, "  \"classifier_dropout\": null,\n");
  EXPECT_EQ(c.to_json_text(), expected);
}

TEST(BertConfig, Id2labelKeysAreStringsAndGiveNumLabels) {
  BertConfig c =
      BertConfig::from_json_text(minimal(R"("id2label": {"0": "ham", "1": "spam", "2": "phish"})"));
  EXPECT_EQ(c.num_labels(), 3);
  EXPECT_EQ(c.id2label.at(2), "phish");
  // label2id absent: derived from id2label.
  EXPECT_EQ(c.label2id.at("spam"), 1);
}

TEST(BertConfig, NumLabelsAloneGivesGenericLabels) {
  BertConfig c = BertConfig::from_json_text(minimal(R"("num_labels": 4)"));
  EXPECT_EQ(c.num_labels(), 4);
  EXPECT_EQ(c.id2label.at(3), "LABEL_3");
  EXPECT_EQ(c.label2id.at("LABEL_3"), 3);
  // num_labels is not a stored field in HF: it is not written back, id2label is.
  EXPECT_EQ(c.to_json_text().find("num_labels"), std::string::npos);
  EXPECT_NE(c.to_json_text().find("\"3\": \"LABEL_3\""), std::string::npos);
}

TEST(BertConfig, NumLabelsDisagreeingWithId2labelWarnsAndId2labelWins) {
  std::vector<std::string> warnings;
  BertConfig c = BertConfig::from_json_text(minimal(R"("num_labels": 5, "id2label": {"0": "a", "1": "b"})"),
                                            "config.json", &warnings);
  EXPECT_EQ(c.num_labels(), 2);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "You passed `num_labels=5` which is incompatible to the `id2label` map of length `2`.");
}

TEST(BertConfig, SetNumLabelsFollowsHfSetter) {
  BertConfig c;
  c.set_labels({"ham", "spam"});
  c.set_num_labels(2);  // same count: labels kept
  EXPECT_EQ(c.id2label.at(1), "spam");
  c.set_num_labels(3);
  EXPECT_EQ(c.id2label.at(1), "LABEL_1");
  EXPECT_EQ(c.label2id.size(), 3u);
}

// `text` less the line of its top-level "transformers_version" (the version stamp berth does not write).
std::string without_version_line(const std::string& text) {
  const std::size_t key = text.find("\n  \"transformers_version\": ");
  if (key == std::string::npos) return text;
  const std::size_t end = text.find('\n', key + 1);
  return text.substr(0, key) + text.substr(end);
}

TEST(BertConfig, WritesTheBytesTransformersWrites) {
  // Every golden config.json is transformers' own save_pretrained output (json.dumps with indent=2 and
  // sort_keys); reading and writing must give the same bytes back, less its version stamp.
  const std::string dir = berth::testing::golden_dir() + "/bert";
  std::ifstream cases(dir + "/cases.txt");
  std::string name;
  int count = 0;
  while (std::getline(cases, name) && count < 100) {
    const std::string text = bert_config_read_text(dir + "/" + name + "/config.json");
    EXPECT_NE(text.find("\"transformers_version\""), std::string::npos) << name;
    EXPECT_EQ(BertConfig::from_json_text(text).to_json_text(), without_version_line(text)) << name;
    ++count;
  }
  EXPECT_GE(count, 5);
  const std::string tiny =
      bert_config_read_text(berth::testing::golden_dir() + "/tiny_bert_classifier/config.json");
  EXPECT_EQ(BertConfig::from_json_text(tiny).to_json_text(), without_version_line(tiny));
}

TEST(BertConfig, ReadsTransformers5Fields) {
  // transformers 5 writes "dtype", BertConfig's decoder fields, and "label2id": null when only id2label
  // was given.
  BertConfig c = BertConfig::from_json_text(minimal(
      R"("dtype": "float32", "is_decoder": false, "add_cross_attention": false, "bos_token_id": null,
         "eos_token_id": null, "tie_word_embeddings": true, "id2label": {"0": "ham", "1": "spam", "2": "phish"},
         "label2id": null)"));
  EXPECT_EQ(c.torch_dtype, std::optional<std::string>("float32"));
  EXPECT_EQ(c.label2id.at("phish"), 2);  // derived from id2label, as when absent
  EXPECT_EQ(c.extra_fields.at("tie_word_embeddings"), "true");
  EXPECT_EQ(c.extra_fields.at("bos_token_id"), "null");
  EXPECT_EQ(c.position_embedding_type, "absolute");
  // No position_embedding_type written: transformers 5's BertConfig has none (a file that had one keeps it).
  EXPECT_EQ(c.to_json_text().find("position_embedding_type"), std::string::npos);
  const BertConfig old = BertConfig::from_json_text(minimal(R"("position_embedding_type": "absolute")"));
  EXPECT_NE(old.to_json_text().find("\"position_embedding_type\": \"absolute\""), std::string::npos);
}

TEST(BertConfig, UnknownFieldsSurviveARoundTrip) {
  BertConfig c = BertConfig::from_json_text(minimal(
      R"("gradient_checkpointing": false, "custom": {"nested": [1, 2.5, "x"]}, "note": "caf\u00e9",
         "transformers_version": "4.30.0", "dtype": "bfloat16")"));
  const std::string text = c.to_json_text();
  expect_contains(
      text, {"\"custom\": {\n    \"nested\": [\n      1,\n      2.5,\n      \"x\"\n    ]\n  }",
             "\"gradient_checkpointing\": false", "\"note\": \"caf\\u00e9\"", "\"dtype\": \"bfloat16\""});
  // berth is not transformers: it writes no transformers_version.
  EXPECT_EQ(text.find("transformers_version"), std::string::npos);
  EXPECT_EQ(BertConfig::from_json_text(text).to_json_text(), text);
}

TEST(BertConfig, SaveReplacesTheFileAndLeavesNoTemporary) {
  berth::testing::TempDir dir;
  std::ofstream(dir.file("config.json")) << "old";
  BertConfig c = BertConfig::from_json_text(minimal());
  c.save(dir.file("config.json"));
  EXPECT_EQ(bert_config_read_text(dir.file("config.json")), c.to_json_text());
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1);
  EXPECT_EQ(BertConfig::load(dir.file("config.json")).to_json_text(), c.to_json_text());
}

TEST(BertConfig, HiddenSizeNotDivisibleByHeads) {
  const std::string text = R"({
  "vocab_size": 100,
  "hidden_size": 100,
  "num_hidden_layers": 2,
  "num_attention_heads": 12,
  "intermediate_size": 64
})";
  expect_contains(parse_error(text),
                  {"dir/config.json:3: hidden_size (100) must be divisible by num_attention_heads "
                   "(12)",
                   "Fix: make hidden_size a multiple of num_attention_heads"});
}

TEST(BertConfig, UnknownActivation) {
  expect_contains(
      parse_error(minimal(R"("hidden_act": "swish")")),
      {"hidden_act \"swish\" is not a supported activation", "gelu, gelu_new, gelu_pytorch_tanh, relu"});
}

TEST(BertConfig, MissingRequiredField) {
  expect_contains(parse_error(R"({"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                                  "intermediate_size": 64})"),
                  {"dir/config.json: vocab_size is missing", "Fix: add \"vocab_size\""});
}

TEST(BertConfig, WrongJsonType) {
  expect_contains(
      parse_error(minimal(R"("max_position_embeddings": "512")")),
      {"dir/config.json:2: max_position_embeddings must be an integer, found a string (\"512\")"});
  expect_contains(parse_error(R"({"vocab_size": 100.5, "hidden_size": 32, "num_hidden_layers": 2,
                                  "num_attention_heads": 4, "intermediate_size": 64})"),
                  {"vocab_size must be an integer, found a number with a fraction (100.5)"});
  expect_contains(parse_error(minimal(R"("hidden_dropout_prob": true)")),
                  {"hidden_dropout_prob must be a number, found a boolean"});
  expect_contains(parse_error(minimal(R"("id2label": ["a", "b"])")), {"id2label must be an object"});
  expect_contains(parse_error("[1, 2]"), {"dir/config.json:1: config.json must hold one JSON object"});
}

TEST(BertConfig, NonPositiveSizes) {
  expect_contains(parse_error(minimal(R"("type_vocab_size": 0)")),
                  {"type_vocab_size (0) must be positive: it is the number of token types"});
  expect_contains(parse_error(R"({"vocab_size": -5, "hidden_size": 32, "num_hidden_layers": 2,
                                  "num_attention_heads": 4, "intermediate_size": 64})"),
                  {"vocab_size (-5) must be positive"});
  expect_contains(parse_error(minimal(R"("layer_norm_eps": 0)")), {"layer_norm_eps (0) must be positive"});
}

TEST(BertConfig, DropoutOutsideZeroOne) {
  expect_contains(parse_error(minimal(R"("attention_probs_dropout_prob": 1.0)")),
                  {"attention_probs_dropout_prob (1) must be in [0, 1)"});
  expect_contains(parse_error(minimal(R"("classifier_dropout": -0.1)")),
                  {"classifier_dropout (-0.1) must be in [0, 1)"});
  EXPECT_DOUBLE_EQ(
      BertConfig::from_json_text(minimal(R"("classifier_dropout": 0.3)")).classifier_dropout_or_default(),
      0.3);
}

TEST(BertConfig, InvalidJsonNamesTheLine) {
  expect_contains(parse_error("{\n  \"vocab_size\": 100,\n  \"hidden_size\": ,\n}"),
                  {"dir/config.json:3: not valid JSON"});
}

TEST(BertConfig, OnlyAbsolutePositionEmbeddings) {
  expect_contains(parse_error(minimal(R"("position_embedding_type": "relative_key")")),
                  {"position_embedding_type \"relative_key\" is not supported", "\"absolute\""});
}

TEST(BertConfig, ProblemTypeRules) {
  expect_contains(parse_error(minimal(R"("problem_type": "ranking")")),
                  {"problem_type \"ranking\" is not one of regression, single_label_classification, "
                   "multi_label_classification"});
  expect_contains(parse_error(minimal(R"("problem_type": "single_label_classification", "num_labels": 1)")),
                  {"\"single_label_classification\" requires num_labels > 1"});
  EXPECT_EQ(
      *BertConfig::from_json_text(minimal(R"("problem_type": "regression", "num_labels": 1)")).problem_type,
      "regression");
}

TEST(BertConfig, OtherModelTypesAreRefused) {
  expect_contains(parse_error(minimal(R"("model_type": "roberta")")),
                  {"model_type is \"roberta\", but berth implements model_type \"bert\" only"});
}

TEST(BertConfig, Id2labelMustNumberLabelsFromZero) {
  expect_contains(parse_error(minimal(R"("id2label": {"zero": "a"})")),
                  {"id2label key \"zero\" is not a label id"});
  expect_contains(parse_error(minimal(R"("id2label": {"0": "a", "2": "c"})")),
                  {"with 1 missing", "ids must be 0..1"});
  expect_contains(parse_error(minimal(R"("id2label": {"0": 7})")), {"must be a label name (a string)"});
}

TEST(BertConfig, PadTokenMustBeInTheVocabulary) {
  expect_contains(parse_error(minimal(R"("pad_token_id": 100)")),
                  {"pad_token_id (100) must be a token id in [0, vocab_size = 100)"});
  EXPECT_FALSE(BertConfig::from_json_text(minimal(R"("pad_token_id": null)")).pad_token_id.has_value());
}

TEST(BertConfig, ValidateChecksAProgrammaticConfig) {
  BertConfig c;
  c.num_attention_heads = 7;
  expect_contains(error_text([&] { c.validate(); }),
                  {"BertConfig: hidden_size (768) must be divisible by num_attention_heads (7)"});
}

TEST(BertConfig, LoadNamesAMissingFile) {
  expect_contains(error_text([] { BertConfig::load("/nonexistent/config.json"); }),
                  {"the model config /nonexistent/config.json: expected a file, found nothing at that path",
                   "config.json next to model.safetensors"});
}

}  // namespace
