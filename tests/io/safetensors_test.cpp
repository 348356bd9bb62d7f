// Tests for safetensors files as tensors: HF's bytes (goldens from tests/goldens/safetensors_goldens.py),
// round trips of every dtype, the file API, bad files and the atomic save.
#include "berth/io/safetensors.h"

#include "berth/core/error.h"
#include "support/safetensors_files.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using berth::io::load_safetensors;
using berth::io::SafetensorsFile;
using berth::io::save_safetensors;
using berth::testing::error_text;
using berth::testing::expect_contains;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string safetensors_golden(const std::string& name) {
  return berth::testing::golden_dir() + "/safetensors/" + name;
}

const std::vector<std::string> kGoldenCases = {"all_dtypes",    "scalars_and_empty", "no_tensors",
                                               "metadata_only", "escaped_names",     "bert_like"};

// The reader gives the values and metadata the reference script wrote.
TEST(Safetensors, ReadsReferenceFiles) {
  for (const std::string& name : kGoldenCases) {
    SCOPED_TRACE(name);
    const SafetensorsFile file = SafetensorsFile::open(safetensors_golden(name + ".safetensors"));
    const auto expected = nlohmann::json::parse(read_bytes(safetensors_golden(name + ".json")));
    const auto metadata = expected["metadata"].get<std::map<std::string, std::string>>();
    EXPECT_EQ(file.metadata(), metadata);
    std::vector<std::string> names;
    for (const auto& [tensor_name, spec] : expected["tensors"].items()) names.push_back(tensor_name);
    EXPECT_EQ(file.names(), names);  // both sorted
    for (const auto& [tensor_name, spec] : expected["tensors"].items()) {
      SCOPED_TRACE(tensor_name);
      const at::Tensor tensor = file.tensor(tensor_name);
      EXPECT_EQ(tensor.sizes().vec(), spec["shape"].get<std::vector<int64_t>>());
      EXPECT_EQ(file.shape(tensor_name), spec["shape"].get<std::vector<int64_t>>());
      EXPECT_EQ(tensor.scalar_type(), file.dtype(tensor_name));
      EXPECT_EQ(berth::io::to_safetensors_dtype(tensor.scalar_type(), tensor_name),
                *berth::io::parse_dtype(spec["dtype"].get<std::string>()));
      const at::Tensor flat = tensor.reshape({-1});
      const auto& values = spec["values"];
      ASSERT_EQ(flat.numel(), static_cast<int64_t>(values.size()));
      for (int64_t i = 0; i < flat.numel(); ++i) {
        if (tensor.scalar_type() == at::kBool) {
          EXPECT_EQ(flat[i].item<bool>(), values[i].get<bool>()) << i;
        } else if (at::isIntegralType(tensor.scalar_type(), /*includeBool=*/false)) {
          EXPECT_EQ(flat[i].item<int64_t>(), values[i].get<int64_t>()) << i;
        } else {
          EXPECT_EQ(flat[i].item<double>(), values[i].get<double>()) << i;
        }
      }
    }
  }
}

// Written back, the same tensors and metadata give the reference file byte for byte.
TEST(Safetensors, WritesTheReferenceBytes) {
  berth::testing::TempDir dir;
  for (const std::string& name : kGoldenCases) {
    SCOPED_TRACE(name);
    const SafetensorsFile file = SafetensorsFile::open(safetensors_golden(name + ".safetensors"));
    const std::string out = dir.file(name + ".safetensors");
    save_safetensors(out, load_safetensors(file.path()), file.metadata());
    const std::string expected = read_bytes(safetensors_golden(name + ".safetensors"));
    const std::string actual = read_bytes(out);
    EXPECT_EQ(actual.size(), expected.size());
    EXPECT_TRUE(actual == expected) << "berth's file differs from the reference layout";
  }
}

at::Tensor sample(at::ScalarType type, at::IntArrayRef shape) {
  at::Tensor values = torch::arange(1, 1 + c10::multiply_integers(shape), torch::kDouble).reshape(shape);
  if (type == at::kBool) return values.remainder(3).eq(0);
  if (at::isFloatingType(type)) return (values * 0.37 - 2).to(type);
  return (values * 37 - 100).to(type);
}

TEST(Safetensors, RoundTripsEveryDtypeScalarsAndEmptyTensors) {
  berth::testing::TempDir dir;
  std::map<std::string, at::Tensor> tensors;
  for (at::ScalarType type : {at::kDouble, at::kFloat, at::kHalf, at::kBFloat16, at::kLong, at::kInt,
                              at::kShort, at::kChar, at::kByte, at::kBool}) {
    const std::string name = c10::toString(type);
    tensors[name + ".matrix"] = sample(type, {3, 5});
    tensors[name + ".scalar"] = sample(type, {});
    tensors[name + ".empty"] = sample(type, {0, 4});
  }
  const std::string path = dir.file("all.safetensors");
  save_safetensors(path, tensors);
  const auto loaded = load_safetensors(path);
  ASSERT_EQ(loaded.size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    const at::Tensor& back = loaded.at(name);
    EXPECT_EQ(back.scalar_type(), tensor.scalar_type());
    EXPECT_EQ(back.sizes(), tensor.sizes());
    EXPECT_TRUE(torch::equal(back, tensor));
  }
  EXPECT_TRUE(SafetensorsFile::open(path).metadata().empty());
}

TEST(Safetensors, RoundTripsMetadata) {
  berth::testing::TempDir dir;
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"note", "a \"quoted\"\nline é"}, {"", ""}};
  save_safetensors(dir.file("m.safetensors"), {{"w", torch::ones({2})}}, metadata);
  EXPECT_EQ(SafetensorsFile::open(dir.file("m.safetensors")).metadata(), metadata);
}

// A transposed view, a strided slice and an expanded tensor are saved as the values they show.
TEST(Safetensors, SavesNonContiguousTensorsAsTheirValues) {
  berth::testing::TempDir dir;
  const at::Tensor base = torch::arange(24, torch::kFloat).reshape({4, 6});
  const std::map<std::string, at::Tensor> tensors = {{"transposed", base.t()},
                                                     {"sliced", base.slice(1, 1, 6, 2)},
                                                     {"expanded", torch::arange(3).expand({2, 3})}};
  save_safetensors(dir.file("views.safetensors"), tensors);
  const auto loaded = load_safetensors(dir.file("views.safetensors"));
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(torch::equal(loaded.at(name), tensor.contiguous()));
  }
}

TEST(Safetensors, SavesGpuTensors) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  berth::testing::TempDir dir;
  const at::Tensor cpu = torch::arange(12, torch::kFloat).reshape({3, 4});
  save_safetensors(dir.file("gpu.safetensors"),
                   {{"w", cpu.to(torch::kCUDA).t()}, {"h", cpu.to(torch::kCUDA).to(torch::kHalf)}});
  const auto loaded = load_safetensors(dir.file("gpu.safetensors"));
  EXPECT_TRUE(loaded.at("w").device().is_cpu());
  EXPECT_TRUE(torch::equal(loaded.at("w"), cpu.t().contiguous()));
  EXPECT_TRUE(torch::equal(loaded.at("h"), cpu.to(torch::kHalf)));
}

TEST(Safetensors, TensorsOutliveTheFileAndShareNothingWithIt) {
  berth::testing::TempDir dir;
  save_safetensors(dir.file("a.safetensors"), {{"w", torch::full({4}, 2.5)}});
  at::Tensor tensor;
  {
    const SafetensorsFile file = SafetensorsFile::open(dir.file("a.safetensors"));
    tensor = file.tensor("w");
  }
  tensor.add_(1);  // writable: a copy, not the read-only mapping
  EXPECT_TRUE(torch::equal(tensor, torch::full({4}, 3.5)));
}

TEST(Safetensors, FileApi) {
  const SafetensorsFile file = SafetensorsFile::open(safetensors_golden("bert_like.safetensors"));
  EXPECT_TRUE(file.contains("classifier.bias"));
  EXPECT_FALSE(file.contains("classifier.weight"));
  EXPECT_EQ(file.shape("bert.embeddings.word_embeddings.weight"), (std::vector<int64_t>{10, 4}));
  EXPECT_EQ(file.dtype("bert.embeddings.position_ids"), at::kLong);
  const std::vector<std::string> names = file.names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  expect_contains(error_text([&] { file.tensor("classifier.weight"); }),
                  {"bert_like.safetensors: no tensor named 'classifier.weight'; the file holds",
                   "'bert.embeddings.LayerNorm.weight'", "'classifier.bias'"});
}

TEST(Safetensors, BoolBytesOtherThanOneReadAsTrue) {
  berth::testing::TempDir dir;
  write_bytes(dir.file("b.safetensors"),
              berth::testing::safetensors_image(R"({"b":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                                std::string("\x00\x02\xff", 3)));
  const at::Tensor b = SafetensorsFile::open(dir.file("b.safetensors")).tensor("b");
  EXPECT_EQ(b[0].item<bool>(), false);
  EXPECT_EQ(b.to(at::kByte)[1].item<int>(), 1);
  EXPECT_EQ(b.to(at::kByte)[2].item<int>(), 1);
}

TEST(Safetensors, BadPathsAndFiles) {
  berth::testing::TempDir dir;
  expect_contains(error_text([&] { SafetensorsFile::open(dir.file("missing.safetensors")); }),
                  {"missing.safetensors: cannot open the safetensors file (No such file or directory)"});
  expect_contains(error_text([&] { SafetensorsFile::open(dir.path().string()); }),
                  {": is a directory, not a safetensors file", "/model.safetensors"});
  write_bytes(dir.file("empty.safetensors"), "");
  expect_contains(error_text([&] { load_safetensors(dir.file("empty.safetensors")); }),
                  {"empty.safetensors: the file is 0 bytes, too short"});
  const std::string reference = read_bytes(safetensors_golden("all_dtypes.safetensors"));
  write_bytes(dir.file("truncated.safetensors"), reference.substr(0, reference.size() - 3));
  expect_contains(error_text([&] { load_safetensors(dir.file("truncated.safetensors")); }),
                  {"truncated.safetensors: tensor '", "reach past the"});
  write_bytes(dir.file("header_cut.safetensors"), reference.substr(0, 40));
  expect_contains(error_text([&] { load_safetensors(dir.file("header_cut.safetensors")); }),
                  {"header_cut.safetensors: the header length is", "bytes but only 32 bytes follow"});
}

TEST(Safetensors, SaveRefusesWhatTheFormatCannotHold) {
  berth::testing::TempDir dir;
  const std::string path = dir.file("x.safetensors");
  expect_contains(error_text([&] {
                    save_safetensors(path, {{"u", at::Tensor()}});
                  }),
                  {"tensor 'u' is undefined"});
  expect_contains(error_text([&] {
                    save_safetensors(path, {{"c", torch::zeros({2}, torch::kComplexFloat)}});
                  }),
                  {"tensor 'c' has dtype ComplexFloat, which berth does not save"});
  expect_contains(error_text([&] {
                    save_safetensors(path, {{"s", torch::eye(3).to_sparse()}});
                  }),
                  {"tensor 's' has layout Sparse", "to_dense()"});
  expect_contains(error_text([&] {
                    save_safetensors(path, {{"m", torch::zeros({2}, torch::Device(torch::kMeta))}});
                  }),
                  {"tensor 'm' is on the meta device"});
  expect_contains(error_text([&] { save_safetensors(dir.file("no/such/dir/x.safetensors"), {}); }),
                  {"cannot create a temporary file", "No such file or directory"});
  EXPECT_FALSE(fs::exists(path));
}

// A failed save leaves the old file as it was and no temporary file behind.
TEST(Safetensors, FailedSaveLeavesTheExistingFileIntact) {
  berth::testing::TempDir dir;
  const std::string path = dir.file("model.safetensors");
  save_safetensors(path, {{"w", torch::ones({3})}});
  const std::string before = read_bytes(path);
  EXPECT_THROW(save_safetensors(path, {{"w", torch::zeros({3})}, {"bad", at::Tensor()}}), berth::Error);
  EXPECT_EQ(read_bytes(path), before);

  // Failing at the last step, the rename onto a directory, after the data was written.
  fs::create_directory(dir.file("taken"));
  write_bytes(dir.file("taken/keep"), "x");
  expect_contains(error_text([&] {
                    save_safetensors(dir.file("taken"), {{"w", torch::ones({3})}});
                  }),
                  {"taken: cannot move", "into place"});
  EXPECT_TRUE(fs::is_directory(dir.file("taken")));
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << entry.path();
  }
  EXPECT_EQ(files, 2u);  // model.safetensors and taken/
}

}  // namespace
