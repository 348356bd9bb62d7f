// PretrainedConfig and the AutoModel table: any family's config.json read with its fields named by file and
// line in errors, written back whole; tasks chosen from the architectures; unknown families and heads refused
// with what berth implements.
#include "berth/model/pretrained_config.h"

#include <gtest/gtest.h>

#include "berth/model/auto_model.h"
#include "berth/model/model_presets.h"
#include "support/test_support.h"

namespace berth {
namespace {

using testing::contains;
using testing::error_text;
using testing::expect_contains;

const char* kLlamaLike = R"({
  "model_type": "llama",
  "hidden_size": 64,
  "rope_theta": 10000.0,
  "rope_scaling": {"rope_type": "linear", "factor": 2.0},
  "tie_word_embeddings": false,
  "head_dim": null,
  "architectures": ["LlamaForCausalLM"],
  "num_attention_heads": "8",
  "transformers_version": "5.24.0"
})";

TEST(PretrainedConfig, FamilyFieldsReadTypedWithFallbacks) {
  const PretrainedConfig config = PretrainedConfig::from_json_text(kLlamaLike, "m/config.json");
  EXPECT_EQ(config.model_type(), "llama");
  EXPECT_EQ(config.get_int("hidden_size"), 64);
  EXPECT_EQ(config.get_number("rope_theta"), 10000.0);
  EXPECT_FALSE(config.get_bool("tie_word_embeddings", true));
  EXPECT_EQ(config.get_int("num_hidden_layers", 2), 2);              // absent: the fallback
  EXPECT_EQ(config.get_optional_int("head_dim", 16), std::nullopt);  // null is null, not the fallback
  EXPECT_EQ(config.get_optional_int("num_key_value_heads", 4), 4);
  EXPECT_FALSE(config.has("head_dim"));
  EXPECT_EQ(config.get_json("rope_scaling"), R"({"factor":2.0,"rope_type":"linear"})");
  EXPECT_EQ(config.num_labels(), 2);
}

TEST(PretrainedConfig, ABadOrMissingFieldIsNamedWithItsFileAndLine) {
  const PretrainedConfig config = PretrainedConfig::from_json_text(kLlamaLike, "m/config.json");
  EXPECT_TRUE(contains(error_text([&] { config.get_int("num_attention_heads"); }),
                       "m/config.json:9: num_attention_heads must be an integer, found a string (\"8\")"));
  EXPECT_TRUE(
      contains(error_text([&] { config.get_int("intermediate_size"); }),
               "m/config.json: intermediate_size is missing: llama's config.json must give it. Fix: add"));
  EXPECT_TRUE(contains(
      error_text([&] { config.unsupported("rope_scaling", "\"longrope\"", "default, linear", "x"); }),
      "m/config.json:5: rope_scaling is \"longrope\"; berth implements default, linear. Fix: x"));
  EXPECT_TRUE(
      contains(error_text([] { PretrainedConfig::from_json_text(R"({"hidden_size": 4})", "c.json"); }),
               "c.json: config.json has no \"model_type\""));
}

TEST(PretrainedConfig, WritesEveryFieldBackAsHfDoes) {
  PretrainedConfig config = PretrainedConfig::from_json_text(kLlamaLike, "m/config.json");
  config.set_labels({"ham", "spam"});
  config.set_int("num_hidden_layers", 3);
  const PretrainedConfig again = PretrainedConfig::from_json_text(config.to_json_text(), "again");
  EXPECT_EQ(again.get_int("num_hidden_layers"), 3);
  EXPECT_EQ(again.get_json("rope_scaling"), config.get_json("rope_scaling"));
  EXPECT_EQ(again.id2label, (std::map<int64_t, std::string>{{0, "ham"}, {1, "spam"}}));
  EXPECT_EQ(*again.architectures, std::vector<std::string>{"LlamaForCausalLM"});
  EXPECT_FALSE(contains(config.to_json_text(), "transformers_version"));  // berth is not transformers
  // Once changed, the file's lines no longer describe it: messages keep the source, without a line.
  EXPECT_TRUE(contains(error_text([&] { config.get_int("num_attention_heads"); }),
                       "m/config.json: num_attention_heads must be an integer"));
}

TEST(AutoModel, TheTaskComesFromTheArchitecturesElseClassification) {
  EXPECT_EQ(task_of_architecture("RobertaForMaskedLM"), ModelTask::MaskedLM);
  EXPECT_EQ(task_of_architecture("GPT2LMHeadModel"), ModelTask::CausalLM);
  EXPECT_EQ(task_of_architecture("BertForTokenClassification"), ModelTask::TokenClassification);
  EXPECT_EQ(task_of_architecture("BertModel"), std::nullopt);
  PretrainedConfig config("bert");
  EXPECT_EQ(default_task(config), ModelTask::SequenceClassification);
  config.architectures = std::vector<std::string>{"BertForPreTraining", "LlamaForCausalLM"};
  EXPECT_EQ(default_task(config), ModelTask::CausalLM);
  for (ModelTask task : all_tasks()) EXPECT_EQ(parse_task(task_name(task)), task);
  EXPECT_TRUE(contains(error_text([] { parse_task("summarization"); }),
                       "unknown task \"summarization\"; berth's tasks are sequence-classification, "
                       "token-classification, masked-lm, causal-lm, question-answering"));
}

TEST(AutoModel, AnUnknownFamilyOrHeadIsRefusedWithWhatIsSupported) {
  const PretrainedConfig t5 = PretrainedConfig::from_json_text(R"({"model_type": "t5"})", "t5/config.json");
  const std::string message = error_text([&] { build_task_model(t5, ModelTask::SequenceClassification); });
  EXPECT_TRUE(contains(message,
                       "t5/config.json:1: model_type is \"t5\", a model family berth does not "
                       "implement; it implements \"bert\""));
  const PretrainedConfig bert = model_preset("bert-tiny", 100);
  EXPECT_TRUE(contains(error_text([&] { build_task_model(bert, ModelTask::CausalLM); }),
                       "model_type \"bert\" has no causal-lm head in berth; it has "
                       "sequence-classification, token-classification, masked-lm, question-answering"));
  EXPECT_EQ(max_positions(bert), 512);
  const auto model = build_task_model(bert, ModelTask::SequenceClassification, {true, 3});
  EXPECT_EQ(model->info().architecture, "BertForSequenceClassification");
  EXPECT_TRUE(contains(error_text([] { model_preset("bert-huge", 100); }),
                       "unknown model preset \"bert-huge\"; berth's presets are bert-tiny"));
}

// Found by fuzz/hf_config_fuzzer: a number beyond a double made nlohmann throw out_of_range (not a
// parse_error), which escaped as a plain std::exception and the CLI exited 1 without a fix.
TEST(PretrainedConfig, NumberBeyondADoubleIsInvalidJsonWithTheFix) {
  expect_contains(error_text([] {
                    PretrainedConfig::from_json_text(R"({"model_type": "bert", "hidden_size": 1e400})",
                                                     "c.json");
                  }),
                  {"c.json: not valid JSON", "number overflow parsing '1e400'", "Fix: repair the file"});
}

}  // namespace
}  // namespace berth
