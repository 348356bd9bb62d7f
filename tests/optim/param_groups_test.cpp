// Tests for hf_param_groups: HF Trainer's decay / no-decay names on a tiny BertForSequenceClassification
// (goldens from tests/goldens/optim_goldens.py, which re-states HF's get_parameter_names on the PyTorch
// model).
#include "berth/optim/param_groups.h"

#include "berth/model/bert_for_sequence_classification.h"
#include "optim/optim_test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using berth::optim::hf_param_groups;

berth::BertForSequenceClassification golden_model(const nlohmann::json& config) {
  berth::BertConfig c;
  for (const auto& [key, value] : config.items()) {
    const int64_t v = value.get<int64_t>();
    if (key == "vocab_size")
      c.vocab_size = v;
    else if (key == "hidden_size")
      c.hidden_size = v;
    else if (key == "num_hidden_layers")
      c.num_hidden_layers = v;
    else if (key == "num_attention_heads")
      c.num_attention_heads = v;
    else if (key == "intermediate_size")
      c.intermediate_size = v;
    else if (key == "max_position_embeddings")
      c.max_position_embeddings = v;
    else if (key == "type_vocab_size")
      c.type_vocab_size = v;
    else
      ADD_FAILURE() << "unknown config key " << key;
  }
  return berth::BertForSequenceClassification(c);
}

TEST(HfParamGroups, MatchHfTrainerOnATinyBertClassifier) {
  const nlohmann::json golden = berth::testing::optim_golden("param_groups.json");
  berth::BertForSequenceClassification model = golden_model(golden.at("config"));
  const auto groups = hf_param_groups(*model, 0.01);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].names, golden.at("decay").get<std::vector<std::string>>());
  EXPECT_EQ(groups[1].names, golden.at("no_decay").get<std::vector<std::string>>());
  EXPECT_EQ(groups[0].weight_decay, 0.01);
  EXPECT_EQ(groups[1].weight_decay, 0.0);
  // Every LayerNorm weight and every bias is in the no-decay group.
  for (const std::string& name : groups[0].names) {
    EXPECT_EQ(name.find("bias"), std::string::npos) << name;
    EXPECT_EQ(name.find("LayerNorm"), std::string::npos) << name;
  }
  // The groups hold the module's own tensors (same storage), not copies.
  const auto named = model->named_parameters();
  for (const auto& group : groups) {
    ASSERT_EQ(group.names.size(), group.params.size());
    for (std::size_t i = 0; i < group.names.size(); ++i)
      EXPECT_TRUE(group.params[i].is_same(named[group.names[i]])) << group.names[i];
  }
  EXPECT_TRUE(berth::optim::hf_decays(*model, "classifier.weight"));
  EXPECT_FALSE(berth::optim::hf_decays(*model, "bert.embeddings.LayerNorm.weight"));
}

TEST(HfParamGroups, FrozenParamsLeftOutAndEmptyGroupsDropped) {
  const nlohmann::json golden = berth::testing::optim_golden("param_groups.json");
  berth::BertForSequenceClassification model = golden_model(golden.at("config"));
  for (auto& p : model->bert->parameters()) p.requires_grad_(false);
  const auto groups = hf_param_groups(*model, 0.1);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].names, std::vector<std::string>{"classifier.weight"});
  EXPECT_EQ(groups[1].names, std::vector<std::string>{"classifier.bias"});

  // A bare LayerNorm (the root itself) has only no-decay parameters: one group.
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({4}));
  const auto norm_groups = hf_param_groups(*norm, 0.1);
  ASSERT_EQ(norm_groups.size(), 1u);
  EXPECT_EQ(norm_groups[0].names, (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(norm_groups[0].weight_decay, 0.0);
}

}  // namespace
