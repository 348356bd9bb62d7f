// Tests for batch and single-tensor placement checks, with meta standing in for a second device.
#include "berth/placement/batch_check.h"

#include "berth/core/error.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

namespace {

const c10::Device kCpu(c10::kCPU);
const c10::Device kMeta(c10::kMeta);

berth::Batch mixed_batch() {
  return berth::Batch{
      {"input_ids", torch::zeros({2, 8}, torch::TensorOptions().dtype(torch::kLong).device(kMeta))},
      {"attention_mask", torch::ones({2, 8}, torch::kLong)},
      {"labels", torch::zeros({2}, torch::TensorOptions().dtype(torch::kLong).device(kMeta))},
  };
}

template <typename Fn>
std::string placement_error(Fn&& fn) {
  return berth::testing::error_text<berth::PlacementError>(std::forward<Fn>(fn));
}

TEST(BatchCheck, AcceptsABatchOnTheModelDevice) {
  berth::Batch batch{{"input_ids", torch::zeros({2, 8}, torch::kLong)},
                     {"labels", torch::zeros({2}, torch::kLong)}};
  EXPECT_NO_THROW(berth::check_batch(batch, kCpu));
}

TEST(BatchCheck, NamesEveryMisplacedField) {
  const std::string text = placement_error([] { berth::check_batch(mixed_batch(), kCpu); });
  EXPECT_EQ(
      text,
      "batch placement: expected every batch tensor on cpu (the model's device), found 2 of 3 elsewhere:\n"
      "  input_ids: meta, shape [2, 8], int64\n"
      "  labels: meta, shape [2], int64\n"
      "Fix: move the batch with berth::place_batch(batch, cpu) or let the Trainer's loader do it.");
}

TEST(BatchCheck, SkipsAbsentOptionalFields) {
  berth::Batch batch{{"input_ids", torch::zeros({2, 8}, torch::kLong)}, {"token_type_ids", torch::Tensor()}};
  EXPECT_NO_THROW(berth::check_batch(batch, kCpu));
  const berth::Batch moved = berth::place_batch(batch, kMeta);
  EXPECT_TRUE(moved.at("input_ids").is_meta());
  EXPECT_FALSE(moved.at("token_type_ids").defined());
}

TEST(BatchCheck, PlaceBatchMovesEveryFieldAndSharesThoseAlreadyThere) {
  const berth::Batch batch = mixed_batch();
  const berth::Batch moved = berth::place_batch(batch, kMeta, berth::PlacementPolicy::Move);
  ASSERT_EQ(moved.size(), 3u);
  for (const auto& [name, tensor] : moved) EXPECT_TRUE(tensor.is_meta()) << name;
  EXPECT_EQ(moved.at("attention_mask").sizes(), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(moved.at("attention_mask").scalar_type(), torch::kLong);
  EXPECT_FALSE(batch.at("attention_mask").is_meta());
  EXPECT_EQ(moved.at("labels").unsafeGetTensorImpl(), batch.at("labels").unsafeGetTensorImpl());
  EXPECT_NO_THROW(berth::check_batch(moved, kMeta));
}

TEST(BatchCheck, PlaceBatchCannotMoveMetaFieldsToARealDevice) {
  const std::string text = placement_error([] { berth::place_batch(mixed_batch(), kCpu); });
  EXPECT_NE(text.find("batch placement: cannot move meta tensors to cpu"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  input_ids: meta, shape [2, 8], int64\n  labels: meta, shape [2], int64\n"),
            std::string::npos)
      << text;
}

TEST(BatchCheck, PlaceBatchStrictChecksOnly) {
  const std::string text =
      placement_error([] { berth::place_batch(mixed_batch(), kCpu, berth::PlacementPolicy::Strict); });
  EXPECT_NE(text.find("found 2 of 3 elsewhere"), std::string::npos) << text;
  berth::Batch ok{{"x", torch::ones({3})}};
  const berth::Batch same = berth::place_batch(ok, kCpu, berth::PlacementPolicy::Strict);
  EXPECT_EQ(same.at("x").unsafeGetTensorImpl(), ok.at("x").unsafeGetTensorImpl());
}

TEST(BatchCheck, CheckTensorOnNamesTheTensorAndBothDevices) {
  const torch::Tensor loss = torch::zeros({}, torch::TensorOptions().device(kMeta));
  const std::string text = placement_error([&] { berth::check_tensor_on(loss, "loss", kCpu); });
  EXPECT_EQ(text,
            "loss is on meta but the model is on cpu (loss: shape [], float32). Fix: compute it from tensors "
            "on cpu: "
            "move the batch with berth::place_batch(batch, cpu) or the tensor with .to(cpu).");
  EXPECT_NO_THROW(berth::check_tensor_on(loss, "loss", kMeta));
}

TEST(BatchCheck, CheckTensorOnRejectsUndefinedTensorsAsAPlainError) {
  try {
    berth::check_tensor_on(torch::Tensor(), "labels", kCpu);
    ADD_FAILURE() << "expected berth::Error";
  } catch (const berth::PlacementError&) {
    ADD_FAILURE() << "an undefined tensor is not a placement problem";
  } catch (const berth::Error& error) {
    EXPECT_NE(std::string(error.what()).find("labels is an undefined tensor"), std::string::npos)
        << error.what();
  }
}

}  // namespace
