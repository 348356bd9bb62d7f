// The truncation length a run uses: --max_length when given, else the smaller of the model's position limit
// (RoBERTa's two padding-offset rows taken off) and the tokenizer's model_max_length.
#include "berth/train/encode_options.h"

#include <gtest/gtest.h>

#include "berth/model/auto_model.h"
#include "berth/model/pretrained_config.h"
#include "support/test_support.h"

namespace berth::train {
namespace {

using berth::testing::error_text;
using berth::testing::expect_contains;

TEST(EncodeOptions, UnsetMaxLengthIsTheModelAndTokenizerLimit) {
  // RoBERTa's 66 position rows hold 64 positions (fairseq's offset past the padding index).
  const PretrainedConfig roberta = PretrainedConfig::from_json_text(
      R"({"model_type": "roberta", "max_position_embeddings": 66, "pad_token_id": 1})", "config.json");
  const int64_t positions = max_positions(roberta);
  EXPECT_EQ(positions, 64);

  TrainingArguments args;
  resolve_max_length(args, positions, std::nullopt);  // a tokenizer without model_max_length (or HF's 1e30)
  EXPECT_EQ(args.max_length, 64);
  args.max_length.reset();
  resolve_max_length(args, positions, 32);  // a tokenizer_config.json with model_max_length 32
  EXPECT_EQ(args.max_length, 32);
  EXPECT_EQ(encode_options(args).max_length, 32u);
  args.max_length = 48;  // given: kept, when the model takes it
  resolve_max_length(args, positions, 32);
  EXPECT_EQ(args.max_length, 48);

  args.max_length = 65;
  expect_contains(
      error_text([&] { resolve_max_length(args, positions, 512); }),
      {"--max_length 65 exceeds the model's max_position_embeddings (64)", "Fix: --max_length 64"});
  // The resolved length is validated with what depends on it.
  args.max_length.reset();
  args.truncation_keep_head = 40;
  expect_contains(error_text([&] { resolve_max_length(args, positions, 32); }),
                  {"truncation_keep_head must be between 0 and max_length - 2 = 30"});
}

}  // namespace
}  // namespace berth::train
