// Tests model signatures: parameter count first, then parameters and buffers with shapes and dtypes, in
// order.
#include "berth/dist/model_signature.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace berth::dist {
namespace {

struct Tiny : torch::nn::Module {
  explicit Tiny(int64_t hidden) {
    fc = register_module("fc", torch::nn::Linear(4, hidden));
    norm = register_module("norm", torch::nn::BatchNorm1d(hidden));
  }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
};

TEST(ModelSignatureTest, ListsCountParametersAndBuffersInOrder) {
  const auto items = model_signature(Tiny(3));
  ASSERT_GE(items.size(), 8u);
  EXPECT_EQ(items[0], (std::pair<std::string, std::string>{"parameter count", "4"}));
  EXPECT_EQ(items[1],
            (std::pair<std::string, std::string>{"parameter fc.weight", "shape [3, 4] dtype float32"}));
  EXPECT_EQ(items[2], (std::pair<std::string, std::string>{"parameter fc.bias", "shape [3] dtype float32"}));
  EXPECT_EQ(items[3].first, "parameter norm.weight");
  EXPECT_EQ(items[5],
            (std::pair<std::string, std::string>{"buffer norm.running_mean", "shape [3] dtype float32"}));
  EXPECT_EQ(items.back(),
            (std::pair<std::string, std::string>{"buffer norm.num_batches_tracked", "shape [] dtype int64"}));
}

TEST(ModelSignatureTest, DifferentModelsDifferFirstAtTheFirstChangedParameter) {
  const auto a = model_signature(Tiny(3));
  const auto b = model_signature(Tiny(5));
  ASSERT_EQ(a.size(), b.size());
  size_t first = 0;
  while (first < a.size() && a[first] == b[first]) ++first;
  ASSERT_LT(first, a.size());
  EXPECT_EQ(a[first].first, "parameter fc.weight");
  EXPECT_EQ(b[first].second, "shape [5, 4] dtype float32");

  // A model with an extra layer differs already at the count.
  torch::nn::Sequential two(torch::nn::Linear(4, 3), torch::nn::Linear(3, 2));
  torch::nn::Sequential one(torch::nn::Linear(4, 3));
  EXPECT_EQ(model_signature(*two)[0].second, "4");
  EXPECT_EQ(model_signature(*one)[0].second, "2");
  EXPECT_EQ(model_signature(*two)[1].first, "parameter 0.weight");
}

}  // namespace
}  // namespace berth::dist
