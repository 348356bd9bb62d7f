// Tests for berth::inspect: per-tensor facts, device groups and their text, on cpu and meta.
#include "berth/placement/inspect.h"

#include "berth/placement/place.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>

namespace {

// embed 48 B + 16 B, norm 16 + 16 (parameters) + 16 + 16 + 8 (buffers), head 32 + 8: 9 tensors, 176 B.
struct InspectNetImpl : torch::nn::Module {
  InspectNetImpl() {
    embed = register_module("embed", torch::nn::Linear(3, 4));
    norm = register_module("norm", torch::nn::BatchNorm1d(4));
    head = register_module("head", torch::nn::Linear(4, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return head(norm(embed(x))); }
  torch::nn::Linear embed{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(InspectNet);

struct EncoderImpl : torch::nn::Module {
  EncoderImpl() {
    layer = register_module("layer", torch::nn::ModuleList(torch::nn::Linear(2, 2), torch::nn::Linear(2, 2)));
  }
  torch::nn::ModuleList layer{nullptr};
};
TORCH_MODULE(Encoder);

struct ModelImpl : torch::nn::Module {
  ModelImpl() { encoder = register_module("encoder", Encoder()); }
  Encoder encoder{nullptr};
};
TORCH_MODULE(Model);

std::vector<std::string> names_of(const berth::ModuleInspection& inspection) {
  std::vector<std::string> names;
  for (const auto& t : inspection.tensors) names.push_back(t.name);
  return names;
}

TEST(Inspect, RecordsEveryParameterAndBufferWithItsFacts) {
  InspectNet net;
  const berth::ModuleInspection inspection = berth::inspect(*net);
  EXPECT_EQ(
      names_of(inspection),
      (std::vector<std::string>{"embed.weight", "embed.bias", "norm.weight", "norm.bias", "norm.running_mean",
                                "norm.running_var", "norm.num_batches_tracked", "head.weight", "head.bias"}));

  const berth::TensorInfo& weight = inspection.tensors[0];
  EXPECT_EQ(weight.kind, berth::TensorKind::Parameter);
  EXPECT_EQ(weight.device, c10::Device(c10::kCPU));
  EXPECT_EQ(weight.dtype, c10::ScalarType::Float);
  EXPECT_EQ(weight.shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(weight.bytes, 48);
  EXPECT_FALSE(weight.has_grad());

  const berth::TensorInfo& mean = inspection.tensors[4];
  EXPECT_EQ(mean.kind, berth::TensorKind::Buffer);
  EXPECT_EQ(mean.bytes, 16);
  const berth::TensorInfo& tracked = inspection.tensors[6];
  EXPECT_EQ(tracked.kind, berth::TensorKind::Buffer);
  EXPECT_EQ(tracked.dtype, c10::ScalarType::Long);
  EXPECT_TRUE(tracked.shape.empty());
  EXPECT_EQ(tracked.bytes, 8);

  EXPECT_EQ(inspection.total_bytes, 176);
  ASSERT_EQ(inspection.groups.size(), 1u);
  EXPECT_EQ(inspection.groups[0].count, 9);
  EXPECT_EQ(inspection.groups[0].bytes, 176);
  EXPECT_EQ(inspection.groups[0].first_names,
            (std::vector<std::string>{"embed.weight", "embed.bias", "norm.weight"}));
  EXPECT_EQ(inspection.summary(), "module: 9 tensors, 176 B: cpu 9 (176 B)");
}

TEST(Inspect, GroupsMixedDevicesInOrderOfFirstAppearance) {
  InspectNet net;
  berth::place(*net->embed, c10::Device(c10::kMeta));
  const berth::ModuleInspection inspection = berth::inspect(*net);
  ASSERT_EQ(inspection.groups.size(), 2u);
  EXPECT_EQ(inspection.groups[0].device, c10::Device(c10::kMeta));
  EXPECT_EQ(inspection.groups[0].describe(), "meta: 2 tensors (64 B): embed.weight, embed.bias");
  EXPECT_EQ(inspection.groups[1].describe(),
            "cpu: 7 tensors (112 B): norm.weight, norm.bias, norm.running_mean, and 4 more");
  EXPECT_EQ(inspection.summary("model"), "model: 9 tensors, 176 B: meta 2 (64 B), cpu 7 (112 B)");
}

TEST(Inspect, NamesNestedModulesTheHuggingFaceWay) {
  Model model;
  EXPECT_EQ(names_of(berth::inspect(*model)),
            (std::vector<std::string>{"encoder.layer.0.weight", "encoder.layer.0.bias",
                                      "encoder.layer.1.weight", "encoder.layer.1.bias"}));
}

TEST(Inspect, RecordsGradsAndTheirDevice) {
  InspectNet net;
  net->forward(torch::ones({5, 3})).sum().backward();
  const berth::ModuleInspection inspection = berth::inspect(*net);
  int with_grad = 0;
  for (const auto& t : inspection.tensors) {
    if (t.kind == berth::TensorKind::Parameter) {
      ASSERT_TRUE(t.has_grad()) << t.name;
      EXPECT_EQ(*t.grad_device, c10::Device(c10::kCPU));
      ++with_grad;
    } else {
      EXPECT_FALSE(t.has_grad()) << t.name;
    }
  }
  EXPECT_EQ(with_grad, 6);
}

TEST(Inspect, CountsTiedTensorsOnce) {
  struct Tied : torch::nn::Module {
    Tied() {
      auto shared = register_parameter("shared", torch::zeros({10}));
      child = register_module("child", std::make_shared<torch::nn::Module>());
      child->register_parameter("alias", shared);
    }
    std::shared_ptr<torch::nn::Module> child;
  } tied;
  const auto tensors = berth::module_tensors(tied);
  ASSERT_EQ(tensors.size(), 1u);
  EXPECT_EQ(tensors[0].name, "shared");
  EXPECT_EQ(berth::inspect(tied).total_bytes, 40);
}

TEST(Inspect, SkipsAbsentBiasAndDescribesEmptyModules) {
  torch::nn::Linear no_bias(torch::nn::LinearOptions(2, 2).bias(false));
  EXPECT_EQ(names_of(berth::inspect(*no_bias)), std::vector<std::string>{"weight"});
  torch::nn::Module empty;
  EXPECT_EQ(berth::inspect(empty).summary(), "module: no parameters or buffers");
}

TEST(Inspect, TableHasOneRowPerTensor) {
  InspectNet net;
  net->forward(torch::ones({5, 3})).sum().backward();
  const std::string table = berth::inspect(*net).table();
  std::istringstream lines(table);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string word; words >> word;) row.push_back(word);
    rows.push_back(row);
  }
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"name", "kind", "device", "dtype", "shape", "bytes", "grad"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"embed.weight", "parameter", "cpu", "float32", "[4,", "3]",
                                               "48", "B", "cpu"}));
  EXPECT_EQ(rows[7], (std::vector<std::string>{"norm.num_batches_tracked", "buffer", "cpu", "int64", "[]",
                                               "8", "B", "-"}));
}

TEST(Inspect, FormatsBytesShapesAndDtypes) {
  EXPECT_EQ(berth::format_bytes(0), "0 B");
  EXPECT_EQ(berth::format_bytes(1023), "1023 B");
  EXPECT_EQ(berth::format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(berth::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(berth::format_bytes(1048575), "1.0 MiB");
  EXPECT_EQ(berth::format_bytes(1258291), "1.2 MiB");
  EXPECT_EQ(berth::format_bytes(int64_t{3} << 30), "3.0 GiB");
  EXPECT_EQ(berth::format_shape({2, 8}), "[2, 8]");
  EXPECT_EQ(berth::format_shape({}), "[]");
  EXPECT_EQ(berth::dtype_name(c10::ScalarType::BFloat16), "bfloat16");
  EXPECT_EQ(berth::dtype_name(c10::ScalarType::Bool), "bool");
  EXPECT_EQ(berth::to_string(berth::TensorKind::Buffer), "buffer");
}

}  // namespace
