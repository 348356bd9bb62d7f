// The named BERT sizes: each builds, with the sizes its name promises.
#include "berth/model/bert_presets.h"

#include "support/test_support.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

TEST(BertPresets, SizesMatchTheirNames) {
  const BertConfig mini = bert_preset("bert-mini", 8000);
  EXPECT_EQ(mini.vocab_size, 8000);
  EXPECT_EQ(mini.num_hidden_layers, 4);
  EXPECT_EQ(mini.hidden_size, 256);
  EXPECT_EQ(mini.num_attention_heads, 4);
  EXPECT_EQ(mini.intermediate_size, 1024);
  const BertConfig base = bert_preset("bert-base");
  EXPECT_EQ(base.num_hidden_layers, 12);
  EXPECT_EQ(base.hidden_size, 768);
  EXPECT_EQ(base.vocab_size, 30522);
  EXPECT_EQ(bert_preset_names().size(), 4u);
  for (const auto& name : bert_preset_names()) EXPECT_NO_THROW(bert_preset(name, 100)) << name;
}

TEST(BertPresets, UnknownNameListsTheKnownOnes) {
  const std::string message = testing::error_text([] { bert_preset("bert-huge"); });
  testing::expect_contains(message, {"unknown model preset 'bert-huge'",
                                     "bert-tiny, bert-mini, bert-small, bert-base", "--model DIR"});
}

}  // namespace
}  // namespace berth
