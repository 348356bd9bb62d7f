// share_task_model / share_parameters: berth's model built from a config whose parameters are a caller's
// tensors (the same storage, so each side sees the other's writes), and what it says about tensors that
// cannot stand for its parameters.
#include "berth/model/shared_parameters.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "berth/io/safetensors.h"
#include "berth/model/auto_model.h"
#include "support/test_support.h"

namespace {

using berth::share_task_model;
using berth::SharedTensors;
using berth::testing::error_text;
using berth::testing::expect_contains;

std::string tiny_classifier_dir() { return berth::testing::golden_dir() + "/tiny_bert_classifier"; }

// The caller's model: the tiny classifier's tensors, each its own storage, plus one berth has no place for.
SharedTensors caller_tensors() {
  SharedTensors tensors = berth::io::load_safetensors(tiny_classifier_dir() + "/model.safetensors");
  tensors["extra.weight"] = torch::zeros({2});
  return tensors;
}

TEST(SharedParameters, EveryParameterIsTheCallersStorage) {
  SharedTensors tensors = caller_tensors();
  auto shared = share_task_model(tiny_classifier_dir(), tensors, "the caller's model");
  size_t parameters = 0;
  for (const auto& item : shared.model->module().named_parameters()) {
    ASSERT_TRUE(tensors.count(item.key())) << item.key();
    EXPECT_EQ(item.value().data_ptr(), tensors[item.key()].data_ptr()) << item.key();
    EXPECT_TRUE(item.value().requires_grad()) << item.key();
    ++parameters;
  }
  EXPECT_GT(parameters, 20u);
  // A write on either side is seen on the other: one storage.
  at::Tensor& classifier = tensors["classifier.weight"];
  classifier.fill_(0.25);
  const auto params = shared.model->module().named_parameters();
  EXPECT_TRUE(params["classifier.weight"].eq(0.25).all().item<bool>());
  {
    torch::NoGradGuard no_grad;
    params["classifier.bias"].add_(1.0);
  }
  EXPECT_TRUE(params["classifier.bias"].equal(tensors["classifier.bias"]));
  // Apart from those writes, the values are the files' (the caller's tensors were read from them).
  auto loaded = berth::load_task_model(tiny_classifier_dir());
  const auto files = loaded.model->module().named_parameters();
  for (const auto& item : params) {
    if (item.key().rfind("classifier.", 0) == 0) continue;
    EXPECT_TRUE(item.value().equal(files[item.key()])) << item.key();
  }
  EXPECT_EQ(shared.report.unexpected, std::vector<std::string>{"extra.weight"});
  ASSERT_EQ(shared.report.warnings.size(), 1u);
  expect_contains(shared.report.warnings[0], {"the caller's model", "extra.weight"});
}

TEST(SharedParameters, TensorsThatCannotStandForTheParametersAreRefusedWithTheFix) {
  SharedTensors missing = caller_tensors();
  missing.erase("classifier.bias");
  expect_contains(
      error_text([&] { share_task_model(tiny_classifier_dir(), missing, "Trainer(model=M)"); }),
      {"Trainer(model=M) has no tensor classifier.bias", "BertForSequenceClassification", "Fix:"});

  SharedTensors shape = caller_tensors();
  shape["classifier.weight"] = torch::zeros({3, shape["classifier.weight"].size(1)});
  expect_contains(error_text([&] { share_task_model(tiny_classifier_dir(), shape, "Trainer(model=M)"); }),
                  {"Trainer(model=M)'s classifier.weight is (3, ",
                   "where berth's BertForSequenceClassification", "(2, ", "Fix:"});

  SharedTensors dtype = caller_tensors();
  dtype["classifier.weight"] = dtype["classifier.weight"].to(torch::kBFloat16);
  expect_contains(error_text([&] { share_task_model(tiny_classifier_dir(), dtype, "Trainer(model=M)"); }),
                  {"classifier.weight is BFloat16", "berth trains Float", "Fix: model.float()"});

  SharedTensors devices = caller_tensors();
  devices["classifier.bias"] = devices["classifier.bias"].to(torch::kMeta);
  expect_contains(error_text([&] { share_task_model(tiny_classifier_dir(), devices, "Trainer(model=M)"); }),
                  {"Trainer(model=M) has tensors on two devices", "meta", "cpu", "Fix: model.to("});

  // Nothing was shared by a refused call: the caller's tensors keep their values.
  SharedTensors kept = caller_tensors();
  const at::Tensor before = kept["bert.embeddings.word_embeddings.weight"].clone();
  kept.erase("classifier.bias");
  EXPECT_FALSE(error_text([&] { share_task_model(tiny_classifier_dir(), kept, "M"); }).empty());
  EXPECT_TRUE(kept["bert.embeddings.word_embeddings.weight"].equal(before));
}

}  // namespace
